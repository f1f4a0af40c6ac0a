import torch
from rowlib import counting

@torch.compile(backend=counting)
def f(x):
    return x.sin() + 1

x = torch.arange(3.0)
torch.compiler.set_stance("force_eager")
print(f(x).tolist())
torch.compiler.set_stance("default")
print(f(x).tolist())
with torch.compiler.set_stance("force_eager"):
    print(f(torch.arange(4.0)).tolist())
