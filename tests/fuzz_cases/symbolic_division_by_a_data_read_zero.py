# exceptions seed 2001260 (inductor backend): args: length differs. Kind: a Python operator on a symbolic
# scalar that raises for some values (1 // int(t.sum()) with a zero sum) ran as C++ in the inductor graph
# (SIGFPE or a value) where eager raises ZeroDivisionError. Fixed: the graph asserts the divisor is not zero,
# raises, and the frame reruns natively (tests/test_symbolic_raising_ops.py runs the inductor side).
from tools.fuzz.harness import *  # noqa: F401,F403
import io

OUT = io.StringIO()


def program(x, y, idx, log):
    t = x * 1
    try:
        t = t + (1 // int(idx.sum() * 0))
    except ZeroDivisionError:
        log.append('zero')
    return t


def main(compile):
    fn = compile(program)
    out, args = [], []
    for call in range(2):
        a = (torch.randn(3, 4), torch.randn(3, 4, requires_grad=call == 1), torch.tensor([(call * 2 + 1) % 4]), [])
        args.append(a)
        out.append(attempt(fn, *a))
    return {"out": out, "args": args, "printed": OUT.getvalue()}
