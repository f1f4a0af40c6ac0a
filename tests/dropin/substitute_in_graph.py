import operator
import torch
from rowlib import counting

@torch.compiler.substitute_in_graph(operator.indexOf)
def index_of(a, b, /):
    for i, item in enumerate(a):
        if item is b or item == b:
            return i
    raise ValueError("sequence.index(x): x not in sequence")

@torch.compile(backend=counting, fullgraph=True)
def f(x, items):
    return x * operator.indexOf(items, 3)

print(f(torch.arange(3.0), [1, 2, 3]).tolist())
