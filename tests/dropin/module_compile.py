import torch
from rowlib import counting

torch.manual_seed(0)
m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
x = torch.ones(2, 3)
expected = m(x)
m.compile(backend=counting)
print(type(m).__name__, torch.allclose(m(x), expected), torch.allclose(m(x), expected))
print(sorted(m.state_dict())[:2])
