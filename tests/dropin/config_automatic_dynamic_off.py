import torch
from rowlib import counting

torch._dynamo.config.automatic_dynamic_shapes = False

@torch.compile(backend=counting)
def f(x):
    return x * 2

for n in (2, 3, 4, 5):
    print(f(torch.arange(float(n))).tolist())
