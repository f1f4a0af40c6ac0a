import torch
from rowlib import counting

torch.manual_seed(0)
m = torch.nn.Linear(3, 2)
c = torch.compile(m, backend=counting)
print(isinstance(c, torch._dynamo.eval_frame.OptimizedModule), isinstance(c, torch._dynamo.OptimizedModule))
print(c._orig_mod is m, sorted(c.state_dict()), callable(c.dynamo_ctx))
x = torch.ones(2, 3)
print(torch.equal(c(x), m(x)))
step = c.dynamo_ctx(lambda x: m(x) * 2)
print(torch.equal(step(x), m(x) * 2))
