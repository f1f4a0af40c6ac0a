import torch
from rowlib import counting

SETTINGS = {"scale": 2}

@torch.compiler.assume_constant_result
def scale():
    return SETTINGS["scale"]

@torch.compile(backend=counting)
def f(x):
    return x * scale()

print(f(torch.arange(3.0)).tolist())
SETTINGS["scale"] = 5
print(f(torch.arange(3.0)).tolist())
