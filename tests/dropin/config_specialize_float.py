import torch
from rowlib import counting

torch._dynamo.config.specialize_float = True

@torch.compile(backend=counting)
def f(x, v):
    return x * v

for v in (2.5, 3.5, 4.5):
    print(f(torch.arange(3.0), v).tolist())
