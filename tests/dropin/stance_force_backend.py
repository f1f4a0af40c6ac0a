import torch
from rowlib import counting

@torch.compile(backend="eager")
def f(x):
    return x.sin() + 1

torch.compiler.set_stance("default", force_backend=counting)
print(f(torch.arange(3.0)).tolist())
