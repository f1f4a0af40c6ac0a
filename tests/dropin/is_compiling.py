import torch
from rowlib import counting

def f(x):
    flags = (torch.compiler.is_compiling(), torch.compiler.is_dynamo_compiling(), torch._dynamo.is_compiling())
    return x + 1 if all(flags) else x - 1

print(f(torch.arange(3.0)).tolist(), torch.compile(f, backend=counting)(torch.arange(3.0)).tolist())
