import torch
from rowlib import counting

torch._dynamo.config.assume_static_by_default = False

@torch.compile(backend=counting)
def f(x, n):
    return x * n

for n in (2, 3, 4):
    print(f(torch.arange(float(n)), n).tolist())
