import torch
from rowlib import counting

def callee(x):
    return x.cos() * 2

@torch.compiler.disable(recursive=False)
def helper(x):
    y = x + 1
    return callee(y) + y

@torch.compile(backend=counting)
def f(x):
    return helper(x.sin())

print(f(torch.arange(3.0)).tolist())
