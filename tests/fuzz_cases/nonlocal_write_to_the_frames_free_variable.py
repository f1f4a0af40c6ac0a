# closures (fuzz seed 43): a function made in the trace rebinds, with nonlocal, a free variable of the
# compiled frame (a cell of the function it is a closure of): the write was lost
from tools.fuzz.harness import *  # noqa: F401,F403
SCALE = 2.0
import io

OUT = io.StringIO()


def make_counter():
    n = 0

    def step(u):
        nonlocal n
        n += 1
        return u * n

    def count():
        return n

    return step, count


STEP, COUNT = make_counter()


def make_program():
    scale = 2.0
    history = []
    calls = 0
    total = None

    def set_scale(value):
        nonlocal scale
        scale = value

    def state():
        return {"scale": scale, "history": history, "calls": calls, "total": total}

    def program(x):
        nonlocal calls, total
        t = x * 1
        def bump(u):
            nonlocal scale
            scale = scale + 1
            return u * scale
        t = bump(t)
        return t

    return program, set_scale, state


def main(compile):
    program, set_scale, state = make_program()
    fn = compile(program)
    out = [attempt(fn, torch.randn(3, 4))]
    set_scale(SCALE)
    out.append(attempt(fn, torch.randn(3, 4)))
    out.append(attempt(fn, torch.randn(3, 4)))
    return {"out": out, "state": snapshot(state()), "count": COUNT(), "printed": OUT.getvalue()}
