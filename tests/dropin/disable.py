import torch
from rowlib import counting

@torch.compiler.disable
def helper(x):
    return x.cos()

@torch._dynamo.disable
def helper2(x):
    return x.tan()

@torch.compile(backend=counting)
def f(x):
    return helper(x.sin()) + helper2(x)

print(f(torch.arange(3.0)).tolist())
