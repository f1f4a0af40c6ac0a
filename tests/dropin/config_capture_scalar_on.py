import torch
from rowlib import counting

torch._dynamo.config.capture_scalar_outputs = True

@torch.compile(backend=counting)
def f(x):
    n = x.sum().item()
    return x * n

print(f(torch.arange(3.0)).tolist())
