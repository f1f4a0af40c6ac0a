import torch
from rowlib import counting

# (a function of its own for each torch.compile call: torch.compile shares cache entries
# between calls compiling the same code, bytegraph keeps each call's own)
def f1(x):
    return x.sin() + 1

def f2(x):
    return x.sin() + 2

def f3(x):
    return x.sin() + 3

x = torch.arange(3.0)
print(torch.compile(f1, backend=counting, disable=True)(x).tolist())
print(torch.compile(f1, backend=counting, name="region")(x).tolist())
g = torch.compile(f2, backend=counting, dynamic=False)
for n in (2, 3, 4):
    print(g(torch.arange(float(n))).tolist())
h = torch.compile(backend=counting, fullgraph=True)(lambda x: x.cos())
print(h(x).tolist())
k = torch.compile(f3, backend=counting, recompile_limit=1)
for n in (5, 6):
    print(k(torch.arange(float(n))).tolist())
