# functools seed 940 (every backend): table: values differ. Kind: a call with hidden state that the trace
# made for real (an lru_cache/cache wrapper: a miss) was made again by the native run when the frame then
# ran natively as a whole (here: an lru_cache over a lambda, an escaping closure), so eager's 0 hits were
# 1. Fixed: the trace reads the cache without calling it, the compiled code makes the real call.
from tools.fuzz.harness import *  # noqa: F401,F403
import io

OUT = io.StringIO()


@functools.cache
def table(k):
    return tuple(range(k))


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
    return {"out": out, "args": args, "table": tuple(table.cache_info()), "printed": OUT.getvalue()}
