"""Training steps: forward, loss, ``backward``, gradient edits and an
optimizer step, compiled as a whole step function, as the model only (the
step runs eagerly around it), or as the loss function; several steps, then
losses, parameters, grads and the optimizer's state (moments, step counts)
are compared with eager's.
"""
from __future__ import annotations

import random

from tools.fuzz.program import Block, Part, pick

PRELUDE = '''\
import io

OUT = io.StringIO()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 2)
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        h = self.fc1(x)
'''

FORWARD = [
    "h = torch.relu(h)", "h = self.norm(h)", "h = torch.nn.functional.dropout(h, 0.2, self.training)",
    "h = h * torch.sigmoid(h)", "h = h + h.detach().mean()", "print(h.shape, file=OUT)", "h = h.clamp(-2, 2)",
    # (a branch on one column: the sum of a LayerNorm output is 0 up to rounding, which a kernel may round either way)
    "if h[:, 0].sum() > 0:\n    h = h * 2", "h = torch.tanh(h) + h", "h = h.float()",
]

OPTIMIZERS = [
    "torch.optim.SGD(model.parameters(), lr=0.1)",
    "torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)",
    "torch.optim.Adam(model.parameters(), lr=0.01)",
    "torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.1)",
    "torch.optim.RMSprop(model.parameters(), lr=0.01)",
    "torch.optim.Adagrad(model.parameters(), lr=0.1)",
]

#: the step's statements in order: (source, probability of being drawn)
STEP = [
    ("opt.zero_grad()", 0.6), ("opt.zero_grad(set_to_none=False)", 0.2), ("out = net(x)", 1.0),
    ("loss = torch.nn.functional.mse_loss(out, target)", 1.0),
    ("loss = loss + 0.01 * sum(p.pow(2).sum() for p in model.parameters())", 0.3),
    ("grads = torch.autograd.grad(loss, list(model.parameters()), retain_graph=True)\n"
     "norms.append(sum(g.norm() for g in grads).detach())", 0.15),
    ("loss.backward()", 0.9), ("torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)", 0.3),
    ("for p in model.parameters():\n    if p.grad is not None:\n        p.grad.mul_(0.5)", 0.2),
    ("opt.step()", 0.9), ("sched.step()", 0.3),
    ("with torch.no_grad():\n    for p in model.parameters():\n        p.sub_(0.01 * p)", 0.15),
    ("print(round(loss.item(), 3), file=OUT)", 0.2), ("norms.append(out.detach().norm())", 0.2),
]

#: what is compiled: the whole step, the model (the step runs eagerly), or the loss only
TARGETS = {
    "step": ("net = model", "fn = compile(step)"),
    "model": ("net = compiled", "fn = step"),
    "loss": ("net = model", "fn = step"),
}

DRIVER = '''
        return self.fc2(h)


def main(compile):
    model = Net()
    opt = {optimizer}
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    compiled = compile(model)
    {net}
    norms = []

    def step(x, target):
'''

TAIL = '''
    {fn}
    losses = []
    for i in range({steps}):
        x, target = torch.randn(6, 4), torch.randn(6, 2)
        losses.append(attempt(fn, x, target))
    return {{"losses": losses, "model": module_state(model), "opt": optimizer_state(opt),
            "norms": norms, "lr": sched.get_last_lr(), "printed": OUT.getvalue()}}
'''

LOSS = '''\
    loss_fn = compile(lambda out, target: torch.nn.functional.mse_loss(out, target) + out.abs().mean())
'''


def generate(rng: random.Random, seed: int) -> list[Part]:
    forward = [s.split("\n") for s in pick(rng, FORWARD, rng.randint(1, 4))]
    target = rng.choice(sorted(TARGETS))
    net, fn = TARGETS[target]
    step = [s.split("\n") for s, p in STEP if rng.random() < p]
    if target == "loss":
        step = [["loss = loss_fn(out, target)"] if s[0].startswith("loss = torch") else s for s in step]
    driver = DRIVER.format(optimizer=rng.choice(OPTIMIZERS), net=net)
    if target == "loss":
        driver = driver.replace("    norms = []\n", "    norms = []\n" + LOSS)
    return [PRELUDE, Block(8, forward), driver, Block(8, step + [["return loss.detach()"]], keep=1),
            TAIL.format(fn=fn, steps=rng.randint(2, 4))]
