import torch
from rowlib import counting

@torch.compile(backend=counting)
def f(x):
    return x.sin() + 1

x = torch.arange(3.0)
print(f(x).tolist())
torch.compiler.reset()
print(f(x).tolist())
torch._dynamo.reset()
print(f(x).tolist())
