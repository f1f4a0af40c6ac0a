import torch
from rowlib import counting

@torch.compile(backend=counting)
def f(x):
    return x.sin() + 1

torch.compiler.set_stance("eager_then_compile")
for n in (3, 4, 5, 6):
    print(f(torch.arange(float(n))).tolist())
