"""``nn.Module`` programs: a model with submodules (a child with a buffer,
``ModuleList``, ``Sequential``, ``ModuleDict``, BatchNorm, Dropout), Python
attributes and buffers read and written in ``forward``, hooks, and between
calls the changes a user makes: ``train()``/``eval()``, parameter updates,
new attribute values, hooks added and removed, submodules swapped, a new
batch size, a backward pass.

``main`` compiles the model, calls it after every change, and records the
outputs, the hook log and the model's state (flags, parameters, buffers,
grads, Python attributes).
"""
from __future__ import annotations

import random

from tools.fuzz.program import Block, Part, statements

PRELUDE = '''\
import io

OUT = io.StringIO()
LOG = []
HANDLES = []


class Child(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("steps", torch.zeros((), dtype=torch.long))
        self.scale = 0.5

    def forward(self, h):
        self.steps.add_(1)
        return torch.tanh(self.lin(h)) * self.scale


def pre_hook(module, args):
    LOG.append(("pre", type(module).__name__))
    return (args[0] * 1.5,)


def post_hook(module, args, out):
    LOG.append(("post", tuple(out.shape)))
    return out + 1


def plain_hook(module, args, out):
    LOG.append(("plain", type(module).__name__))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.child = Child()
        self.blocks = nn.ModuleList([Child(), Child()])
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
        self.bn = nn.BatchNorm1d(4)
        self.drop = nn.Dropout(0.3)
        self.md = nn.ModuleDict({"a": nn.Linear(4, 4), "b": nn.Identity()})
        self.register_buffer("ema", torch.zeros(4))
        self.register_buffer("calls", torch.zeros((), dtype=torch.long))
        self.p = nn.Parameter(torch.ones(4))
        self.alpha = 0.5
        self.use_extra = True

    def forward(self, x):
        h = x
'''

FORWARD = [
    ("h = self.lin(h)", 3), ("h = self.child(h)", 2), "for blk in self.blocks:\n    h = blk(h) + h",
    "h = self.seq(h)", "h = self.bn(h)", "h = self.drop(h)", "h = self.md['a'](h) + self.md['b'](h)",
    "for name, sub in self.md.items():\n    h = sub(h) * 0.5 + h",
    "self.ema.mul_(0.9).add_(h.detach().mean(0) * 0.1)", "self.calls += 1", "h = h * self.alpha + self.p",
    "if self.training:\n    h = h * 2\nelse:\n    h = h - 1", "if self.use_extra:\n    h = h + self.ema",
    "h = torch.nn.functional.gelu(h)", "print(h.shape, file=OUT)", "self.last = h.detach()",
    "h = h + sum(p.sum() for p in self.child.parameters()) * 0.01",
    "h = h + len(list(self.children())) * 0.1", "h = self.child.lin(h) * self.child.scale",
    "h = h + self.calls.float()", "h = h + self.lin.weight.sum() * 0.01",
    "h = nn.functional.linear(h, self.lin.weight, self.lin.bias)", "h = h @ self.lin.weight.t()",
    "self.alpha = self.alpha * 0.5", "h = h.relu_()", "h = h + self.child.steps",
    "if len(self.blocks) > 2:\n    h = h * 0.1", "h = h * self.blocks[-1].scale",
    "h = h + getattr(self, 'bonus', 0.0)",
]

#: changes between calls (each ends with a call: ``{call}``)
ACTIONS = [
    "m.eval()", "m.train()", "with torch.no_grad():\n    m.lin.weight.add_(0.1)", "m.alpha = 2.5",
    "m.use_extra = not m.use_extra", "HANDLES.append(m.register_forward_pre_hook(pre_hook))",
    "HANDLES.append(m.child.register_forward_hook(post_hook))",
    "HANDLES.append(m.register_forward_hook(plain_hook))", "for handle in HANDLES:\n    handle.remove()",
    "m.child.lin.weight = nn.Parameter(torch.randn(4, 4))", "m.drop.p = 0.0", "m.lin = nn.Linear(4, 4)",
    "m.blocks.append(Child())", "m.requires_grad_(False)", "m.double()", "m.zero_grad()",
    "m.bonus = 1.0", "m.child.scale = 3", "m.md['b'] = nn.Tanh()", "del m.md['a']",
    "x = torch.randn(7, 4)", "x = torch.randn(1, 4)",
    "r = attempt(lambda: cm(x).sum().backward())",
    "with torch.no_grad():\n    out.append(attempt(cm, x.clone()))",
    "m.child.register_buffer('steps', torch.full((), 5))",
]

DRIVER = '''

def main(compile):
    m = Model()
    cm = compile(m)
    x = torch.randn(5, 4)
    out = [attempt(cm, x.clone())]
'''

RECORD = '''\
    attrs = {k: v for k, v in vars(m).items() if not k.startswith("_") and k != "training"}
    return {"out": out, "model": module_state(m), "attrs": snapshot(attrs), "log": LOG,
            "printed": OUT.getvalue()}
'''


def generate(rng: random.Random, seed: int) -> list[Part]:
    forward = statements(rng, FORWARD, 2, 7)
    actions = [a + ["out.append(attempt(cm, x.clone()))"] for a in statements(rng, ACTIONS, 1, 5)]
    return [PRELUDE, Block(8, forward + [["return h"]], keep=1), DRIVER, Block(4, actions), RECORD]
