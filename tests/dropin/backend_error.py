import torch

def failing(gm, example_inputs):
    raise RuntimeError("this backend fails")

@torch.compile(backend=failing)
def f(x):
    return x * 2

try:
    print(f(torch.arange(3.0)).tolist())
except Exception as e:
    print("raised", type(e).__name__)
