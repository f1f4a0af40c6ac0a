import torch
from rowlib import counting

@torch.compile(backend=counting)
def f(x):
    y = x.sin()
    torch._dynamo.graph_break()
    return y.cos()

print(f(torch.arange(3.0)).tolist())
