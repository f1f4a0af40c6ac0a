import torch
from rowlib import counting

def f(x):
    return x.sin() + 1

x = torch.arange(3.0)
print(torch.compile(f, backend=counting, disable=True)(x).tolist())
print(torch.compile(f, backend=counting, name="region")(x).tolist())
g = torch.compile(f, backend=counting, dynamic=False)
for n in (2, 3, 4):
    print(g(torch.arange(float(n))).tolist())
h = torch.compile(backend=counting, fullgraph=True)(lambda x: x.cos())
print(h(x).tolist())
k = torch.compile(f, backend=counting, recompile_limit=1)
for n in (5, 6):
    print(k(torch.arange(float(n))).tolist())
