# tensor seed 60614 (aot_eager): out: values differ. Kind: a random op nothing reads but a dead
# multi-output operation (t4.unbind(0), whose result is a tuple, then a dead stack) is taken for live,
# so it is not kept as an extra graph output, and AOTAutograd removes the dead chain: the generator does
# not advance and the next draw (t5) differs from eager's. Without the unbind/stack the dead draw is kept
# (tests/test_fuzz.py::dead_random_op_advances_the_generator). Fixed: a node giving a tuple of tensors is
# dead unless something live reads it, as a tensor node is.
from tools.fuzz.harness import *  # noqa: F401,F403
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
SEED = 60614


def program(x, y, idx, state, log, obj):
    t1 = x * 2
    t3 = t1 + torch.rand(3, 4)
    t4 = t1 + t3
    t5 = x + torch.rand(3, 4)
    t6 = torch.stack(t4.unbind(0))
    return (t5,)


def main(compile):
    fn = compile(program)
    first, second = make_inputs(SEED), make_inputs(SEED + 3)
    out = attempt(fn, **first)
    again = attempt(fn, **second)
    return {"out": out, "inputs": first, "again": again, "inputs_again": second,
            "globals": snapshot({"G": G, "COUNTER": COUNTER, "NOTES": NOTES})}
