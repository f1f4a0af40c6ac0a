import torch
from rowlib import counting

@torch.compile(backend=counting)
def f(x):
    return x.sin() + 1

print(f(torch.arange(3.0)).tolist())
torch.compiler.set_stance("fail_on_recompile")
print(f(torch.arange(3.0)).tolist())
try:
    f(torch.arange(4.0))
except RuntimeError as e:
    print("raised RuntimeError:", "recompile" in str(e))
