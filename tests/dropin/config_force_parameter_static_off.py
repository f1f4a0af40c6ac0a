import torch
from rowlib import counting

torch._dynamo.config.force_parameter_static_shapes = False

m = torch.nn.Linear(3, 2)
c = torch.compile(m, backend=counting)
for n in (2, 3, 4):
    c.weight = torch.nn.Parameter(torch.ones(n, 3))
    c.bias = torch.nn.Parameter(torch.zeros(n))
    print(c(torch.ones(1, 3)).tolist())
