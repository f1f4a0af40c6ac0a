import torch

def helper(x):
    print("helper runs")
    return x.cos() * 2

torch.compiler.allow_in_graph(helper)
seen = []

def backend(gm, example_inputs):
    seen.append([n.target is helper for n in gm.graph.nodes if n.op == "call_function"].count(True))
    return gm.forward

@torch.compile(backend=backend)
def f(x):
    return helper(x.sin()) + 1

print(f(torch.arange(3.0)).tolist())
print("graphs:", len(seen), "helper nodes:", seen)
