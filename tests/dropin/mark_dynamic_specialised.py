import torch
from rowlib import counting

@torch.compile(backend=counting)
def f(x):
    if x.shape[0] == 3:
        return x + 1
    return x - 1

x = torch.arange(3.0)
torch._dynamo.mark_dynamic(x, 0)
try:
    f(x)
except Exception as e:
    print("raised", type(e).__name__)
