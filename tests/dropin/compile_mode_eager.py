import torch
from rowlib import counting

m = torch.nn.Linear(3, 2)
torch.manual_seed(0)
c = torch.compile(m, mode="max-autotune-no-cudagraphs", backend="eager")
x = torch.ones(2, 3)
print(torch.equal(c(x), m(x)))
g = torch.compile(lambda x: x * 2, mode="reduce-overhead", backend=counting)
print(g(x).tolist())
h = torch.compile(lambda x: x * 3, options={"some_option": 1}, backend=counting)
print(h(x).tolist())
