import numpy as np
import torch
from rowlib import counting

@torch.compile(backend=counting, fullgraph=True)
@torch.compiler.wrap_numpy
def f(x):
    return np.sum(x * 2) + np.ones_like(x)

print(f(torch.arange(3.0)).tolist())
