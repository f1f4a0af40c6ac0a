import torch
from rowlib import counting

@torch.compile(backend=counting)
def f(x):
    return x.sin() + 1

@torch.compiler.set_stance("force_eager")
def run_eagerly(x):
    return f(x)

print(run_eagerly(torch.arange(3.0)).tolist())
print(f(torch.arange(3.0)).tolist())
