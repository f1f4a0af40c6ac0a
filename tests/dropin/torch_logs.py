# env: TORCH_LOGS=recompiles
import torch
from rowlib import counting

@torch.compile(backend=counting)
def f(x):
    return x * 2

f(torch.arange(3.0))
f(torch.arange(4.0))
