import torch

names = torch.compiler.list_backends()
print("inductor" in names, "eager" in names)
print(torch.compile(lambda x: x + 1, backend="cudagraphs")(torch.arange(3.0)).tolist() if "cudagraphs" in names else None)
