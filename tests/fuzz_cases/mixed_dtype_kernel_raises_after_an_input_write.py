# module seed 50223 (eager backend): attrs: values differ. Kind: an operation whose meta function accepts
# floating-point arguments of different dtypes that its kernel rejects (linear after the module's
# double(), with a float32 input): the graph raised when it ran after writing an input (the buffer's
# add_), so the frame could not rerun, and the attribute store traced before it was lost (on inductor,
# seed 2001550, it computed a value in float64 where eager raises). Fixed: the trace breaks before such
# an operation, which runs natively (graph/strict_dtypes.py).
# (The model parts the program does not use were removed by hand.)
from tools.fuzz.harness import *  # noqa: F401,F403


class Child(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))

    def forward(self, h):
        self.steps.add_(1)
        return torch.tanh(self.lin(h))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.child = Child()
        self.alpha = 0.5

    def forward(self, x):
        self.alpha = self.alpha * 0.5
        return self.child(x)


def main(compile):
    m = Model()
    cm = compile(m)
    x = torch.randn(5, 4)
    out = [attempt(cm, x.clone())]
    m.double()
    out.append(attempt(cm, x.clone()))
    return {"out": out, "model": module_state(m), "alpha": m.alpha}
