import torch
from rowlib import counting

torch._dynamo.config.specialize_int = True

@torch.compile(backend=counting)
def f(x, n):
    return x * n

for n in (2, 3, 4):
    print(f(torch.arange(3.0), n).tolist())
