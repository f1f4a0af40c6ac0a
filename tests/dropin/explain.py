import torch

def f(x):
    y = x.sin()
    print("break")
    return y.cos()

out = torch._dynamo.explain(f)(torch.arange(3.0))
print(out.graph_count, out.graph_break_count, out.op_count)
