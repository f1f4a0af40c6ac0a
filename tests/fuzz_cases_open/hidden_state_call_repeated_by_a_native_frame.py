# functools seed 940 (every backend): table: values differ. Kind: a call with hidden state that the trace
# made for real (an lru_cache/cache wrapper: a miss) is made again by the native run when the frame then
# runs natively as a whole (here: an lru_cache over a lambda, an escaping closure), so eager's 0 hits
# are 1. Open: not fixed yet.
from tools.fuzz.harness import *  # noqa: F401,F403
import io

OUT = io.StringIO()


@functools.lru_cache(maxsize=8)
def scale_for(n):
    return n * 0.5 + 1


@functools.cache
def table(k):
    return tuple(range(k))


def mul(u, k=2.0):
    return u * k


double = functools.partial(mul, k=2.0)
add2 = functools.partial(functools.partial(torch.add, alpha=2))


def deco(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs) + 1
    return wrapper


@deco
def plus(u):
    return u * 3


class Holder:
    def __init__(self, u):
        self.u = u

    @functools.cached_property
    def heavy(self):
        return self.u.sum() * 2

    def scaled(self, k):
        return self.u * k

    triple = functools.partialmethod(scaled, 3)


@functools.singledispatch
def describe(value):
    return 0


@describe.register
def _(value: int):
    return value + 1
def program(x, k):
    t = x * 1
    res = {}
    t = t + table(k)[-1]
    cached = functools.lru_cache(maxsize=None)(lambda n: n + 1)
    t = t * cached(k) * cached(k)
    return t, res


def main(compile):
    fn = compile(program)
    out, args = [], []
    for call in range(2):
        a = (torch.randn(3, 4), 2 + call)
        args.append(a)
        out.append(attempt(fn, *a))
    return {"out": out, "args": args, "scale_for": tuple(scale_for.cache_info()), "table": tuple(table.cache_info()), "printed": OUT.getvalue()}
