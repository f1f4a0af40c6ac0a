import torch
from rowlib import counting

torch._dynamo.config.capture_dynamic_output_shape_ops = False

@torch.compile(backend=counting)
def f(x):
    return torch.nonzero(x).float() * 2

print(f(torch.tensor([0.0, 1.0, 0.0, 2.0])).tolist())
