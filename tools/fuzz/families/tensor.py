"""The tensor family: straight-line programs in the style of model code.

The body of ``def program(x, y, idx, state, log, obj)`` is a list of
statements over a pool of tensors; ``main`` calls the compiled program twice
(inputs of the program's seed, then other values: a cache hit) and records
results, inputs and globals. Tensors
in the program's pool all have shape (3, 4), so any statement may combine any
two of them; statements cover tensor ops, in-place ops and views, shape- and
data-dependent control flow, containers, closures, user classes, dataclasses,
exceptions, globals, graph-breaking calls, grad modes, random ops, and
attribute names and dict keys that are not identifiers (or are code).
"""
from __future__ import annotations

import random
from typing import Callable

from tools.fuzz.program import Block, Part

#: the module around every program (fresh per run, so globals start equal)
PRELUDE = '''\
G = {"count": 0}
COUNTER = 0
SCALE = 2.0


class Acc:
    def __init__(self, t):
        self.total = t
        self.calls = []

    def add(self, t):
        self.total = self.total + t
        self.calls.append(len(self.calls))
        return self.total


@dataclasses.dataclass
class Pair:
    a: torch.Tensor
    b: torch.Tensor

    def mix(self):
        return self.a * 0.5 + self.b


def make_counter():
    seen = []

    class Noter:
        def note(self, t):
            seen.append(1)
            return t + len(seen)

    return Noter, seen


Noter, NOTES = make_counter()
'''


class Context:
    """What the statements generated so far define."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.tensors = ["x", "y"]
        self.fresh = 0
        self.has_list = False
        self.has_dict = False
        self.depth = 0

    def pick(self) -> str:
        return self.rng.choice(self.tensors)

    def new(self) -> str:
        name = f"t{self.fresh}"
        self.fresh += 1
        return name

    def define(self, name: str) -> None:
        if name not in self.tensors:
            self.tensors.append(name)


def _unary(c: Context) -> list[str]:
    a, n = c.pick(), c.new()
    op = c.rng.choice(["torch.relu({})", "torch.sin({})", "torch.tanh({})", "{}.abs() + 1", "torch.sigmoid({})",
                       "{}.clamp(-1, 1).exp()", "-{}", "{}.sum(0, keepdim=True).expand(3, 4)",
                       "{}.softmax(-1)", "{}.cumsum(1)", "{}.flip(0)", "{}.float() * SCALE"])
    c.define(n)
    return [f"{n} = {op.format(a)}"]


def _binary(c: Context) -> list[str]:
    a, b, n = c.pick(), c.pick(), c.new()
    op = c.rng.choice(["{} + {}", "{} - {}", "{} * {}", "torch.maximum({}, {})", "torch.where({} > 0, {}, 0.5)",
                       "{} @ {}.t() @ torch.ones(3, 4)", "torch.cat([{}, {}], 1)[:, :4]"])
    c.define(n)
    return [f"{n} = {op.format(a, b)}"]


def _inplace(c: Context) -> list[str]:
    a, b = c.pick(), c.pick()
    op = c.rng.choice(["{}.add_(1.5)", "{}.mul_({})", "{}.clamp_(min=-0.5)", "{}.addcmul_({}, {}, value=0.5)",
                       "{}[0].zero_()", "{}.t()[1].fill_(2.0)", "{}.view(12)[:5].mul_(3)"])
    return [op.format(a, b, b)]


def _view(c: Context) -> list[str]:
    a, n = c.pick(), c.new()
    op = c.rng.choice(["{}.view(4, 3).view(3, 4)", "{}.t().contiguous().t()", "{}.unsqueeze(0)[0]",
                       "{}.reshape(12).reshape(3, 4)", "{}.transpose(0, 1).transpose(0, 1)",
                       "torch.stack({}.unbind(0))"])
    c.define(n)
    return [f"{n} = {op.format(a)}"]


def _shape_branch(c: Context) -> list[str]:
    a, n = c.pick(), c.new()
    c.define(n)
    return [f"if {a}.shape[{c.rng.randint(0, 1)}] > {c.rng.randint(2, 4)}:",
            f"    {n} = {a} + 1", "else:", f"    {n} = {a} - 1"]


def _data_branch(c: Context) -> list[str]:
    a, b, n = c.pick(), c.pick(), c.new()
    c.define(n)
    cond = c.rng.choice([f"{a}.sum() > 0", f"{a}.max().item() > 0.5", f"bool(({a} > {b}).any())"])
    return [f"if {cond}:", f"    {n} = {a} * 2", "else:", f"    {n} = {b} / 2"]


def _containers(c: Context) -> list[str]:
    a, b, n = c.pick(), c.pick(), c.new()
    lines = []
    if not c.has_list:
        lines.append("lst = []")
        c.has_list = True
    if not c.has_dict:
        lines.append("d = {}")
        c.has_dict = True
    lines += c.rng.choice([
        [f"lst.append({a})", f"{n} = lst[-1] + len(lst)"],
        [f"d['k{c.fresh}'] = {a}", f"{n} = sum(d.values()) * 1.0 + {b}"],
        [f"p, q = {a}.chunk(2, dim=1)", f"{n} = torch.cat([q, p], 1)"],
        [f"{n} = {b}", f"for i, u in enumerate([{a}, {b}]):", f"    {n} = {n} + u * i"],
        [f"lst.extend([{a}, {b}])", f"{n} = lst.pop() - lst[0]"],
    ])
    c.define(n)
    return lines


def _closure(c: Context) -> list[str]:
    a, b, n = c.pick(), c.pick(), c.new()
    c.define(n)
    return [f"def f{n}(u, k=SCALE):", f"    return u * {a} + k", f"{n} = f{n}({b})"]


def _user_class(c: Context) -> list[str]:
    a, b, n = c.pick(), c.pick(), c.new()
    c.define(n)
    return c.rng.choice([
        [f"acc = Acc({a})", f"acc.add({b})", f"{n} = acc.add({a}) * len(acc.calls)"],
        [f"{n} = Noter().note({a})"],
        [f"obj.w = obj.w + {a}.mean()", f"{n} = {b} * obj.w"],
        [f"{n} = getattr(obj, 'scale', 1.0) * {a}"],
    ])


def _dataclass(c: Context) -> list[str]:
    a, b, n = c.pick(), c.pick(), c.new()
    c.define(n)
    return [f"pair = Pair({a}, {b})", f"pair.b = pair.b + 1", f"{n} = pair.mix()"]


def _exception(c: Context) -> list[str]:
    a, n = c.pick(), c.new()
    c.define(n)
    return c.rng.choice([
        ["try:", f"    if {a}.shape[1] == 4:", "        raise ValueError('v')", f"    {n} = {a}",
         "except ValueError:", f"    {n} = {a} * 3"],
        ["try:", f"    {n} = {a}.index_select(0, idx)", "except IndexError:", f"    {n} = {a} + 0.25"],
        [f"log.append('before {n}')", f"{n} = {a}.index_select(0, idx).expand(3, 4)"],
        ["try:", f"    {n} = {a} + state['missing']", "except KeyError as e:", f"    {n} = {a} - len(str(e))"],
    ])


def _globals(c: Context) -> list[str]:
    a = c.pick()
    return c.rng.choice([
        ["G['count'] += 1"],
        [f"G['last'] = {a}"],
        ["COUNTER += 1"],
        [f"state['n'] = state['n'] + 1", f"state['w'].mul_(2)"],
    ])


def _breaking_call(c: Context) -> list[str]:
    a, n = c.pick(), c.new()
    c.define(n)
    return c.rng.choice([
        [f"print({a}.shape, file=SINK)", f"{n} = {a} + 1"],
        [f"{n} = {a} * float({a}.sum())"],
        [f"{n} = torch.tensor({a}.tolist()) + {a}"],
        [f"log.append({a}.shape[0])", f"{n} = {a} * len(log)"],
    ])


def _grad_mode(c: Context) -> list[str]:
    a, b, n = c.pick(), c.pick(), c.new()
    c.define(n)
    return c.rng.choice([
        ["with torch.no_grad():", f"    {n} = {a} * 2 + {b}"],
        ["with torch.enable_grad():", f"    {n} = {a} * {b}"],
        ["with torch.no_grad():", f"    {n} = {a} + 1", f"    {a}.add_(0.5)"],
        [f"{n} = {a}.detach() * {b}"],
    ])


def _random(c: Context) -> list[str]:
    a, n = c.pick(), c.new()
    c.define(n)
    return c.rng.choice([[f"{n} = {a} + torch.rand(3, 4)"],
                         [f"{n} = torch.nn.functional.dropout({a}, 0.5, training=True)"]])


#: names and keys that are not identifiers or are code (user data must stay data)
HOSTILE_NAMES = ["a'b", 'q"', "line\nbreak", "}{)(", "", "if", "a if G.update(hit=1) else a", "\ufb01", "x y"]


def _hostile(c: Context) -> list[str]:
    a, n = c.pick(), c.new()
    name = c.rng.choice(HOSTILE_NAMES)
    c.define(n)
    return c.rng.choice([
        [f"hd = {{{name!r}: {a}}}", f"{n} = hd[{name!r}] * 2 if {name!r} in hd else {a}"],
        [f"setattr(obj, {name!r}, {a} + 1)", f"{n} = getattr(obj, {name!r}) - 1"],
    ])


STATEMENTS: list[tuple[Callable[[Context], list[str]], int]] = [
    (_unary, 6), (_binary, 6), (_inplace, 3), (_view, 3), (_shape_branch, 2), (_data_branch, 1),
    (_containers, 3), (_closure, 2), (_user_class, 2), (_dataclass, 1), (_exception, 2), (_globals, 2),
    (_breaking_call, 1), (_grad_mode, 2), (_random, 1), (_hostile, 1),
]


DRIVER = """
def main(compile):
    fn = compile(program)
    first, second = make_inputs(SEED), make_inputs(SEED + 3)
    out = attempt(fn, **first)
    again = attempt(fn, **second)
    return {"out": out, "inputs": first, "again": again, "inputs_again": second,
            "globals": snapshot({"G": G, "COUNTER": COUNTER, "NOTES": NOTES})}
"""


def body(rng: random.Random) -> list[list[str]]:
    """The statements of one program (the last one is the return)."""
    c = Context(rng)
    kinds, weights = zip(*STATEMENTS)
    stmts = [rng.choices(kinds, weights)[0](c) for _ in range(rng.randint(3, 10))]
    returned = rng.sample(c.tensors, min(len(c.tensors), rng.randint(1, 3)))
    extra = ["lst"] if c.has_list and rng.random() < 0.5 else []
    stmts.append([f"return ({', '.join(returned + extra)},)"])
    return stmts


def program(stmts: list[list[str]], seed: int) -> list[Part]:
    """The program with body ``stmts`` on the inputs of ``seed``."""
    return [PRELUDE, f"SEED = {seed}\n\n\ndef program(x, y, idx, state, log, obj):\n    global COUNTER",
            Block(4, stmts, keep=1), DRIVER]


def generate(rng: random.Random, seed: int) -> list[Part]:
    return program(body(rng), seed)
