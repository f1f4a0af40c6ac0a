import torch

torch._dynamo.config.suppress_errors = True

def failing(gm, example_inputs):
    raise RuntimeError("this backend fails")

@torch.compile(backend=failing)
def f(x):
    return x * 2

print(f(torch.arange(3.0)).tolist())
