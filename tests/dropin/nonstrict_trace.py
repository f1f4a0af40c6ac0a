import torch
from rowlib import counting

@torch._dynamo.nonstrict_trace
def helper(x):
    torch._dynamo.graph_break()
    return x.cos() * 2

@torch.compile(backend=counting, fullgraph=True)
def f(x):
    return helper(x.sin()) + 1

print(f(torch.arange(3.0)).tolist())
