import torch
from rowlib import counting

@torch.compile(backend=counting, fullgraph=True)
def f(x):
    print("inside")
    return x + 1

try:
    f(torch.arange(3.0))
except Exception as e:
    print("raised", type(e).__name__)
