"""Faults: an interrupt in the middle of a trace, a guard or a graph; user code
that raises while bytegraph runs it (a guard reading an attribute, tracing
hashing a dict key); backends that raise, hang, or return something that is
not a compiled graph; a corrupt or unusable inductor cache folder. Each must
leave the call behaving as eager does (or running natively, reported once)
and bytegraph usable for the next call."""
import functools
import io
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import pytest
import torch

import bytegraph
from bytegraph.testing import CompileCounter, same
from tests.helpers import break_types


# ---- interrupts ---------------------------------------------------------------------------------

class InterruptAt:
    """A backend that runs its graph node by node and raises KeyboardInterrupt
    (what a Ctrl-C raises) before the ``at``-th call node of the first run."""

    def __init__(self, at):
        self.at, self.graphs = at, 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        backend = self

        class Interrupting(torch.fx.Interpreter):
            calls = 0

            def run_node(self, n):
                if n.op == "call_function" and backend.at is not None:
                    Interrupting.calls += 1
                    if Interrupting.calls == backend.at:
                        backend.at = None  # once
                        raise KeyboardInterrupt
                return super().run_node(n)

        return lambda *args: Interrupting(gm).run(*args)


def _in_no_grad(x, y):
    with torch.no_grad():
        z = x * 2
        z = z + 1
    return z * y


def _in_enable_grad(x, y):
    with torch.enable_grad():
        z = x * y
        z = z.sin()
    return z + 1


def _in_no_grad_drawing(x, y):  # draws random numbers: the graph runs under the other wrapper
    with torch.no_grad():
        z = x * 2
        z = z + torch.rand(3)
    return z * y


def _in_autocast(x, y):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        z = x @ y.t()
        z = z + 1
    return z.float()


@pytest.mark.parametrize("fn, outer_grad", [(_in_no_grad, True), (_in_enable_grad, False),
                                            (_in_no_grad_drawing, True), (_in_autocast, True)])
def test_interrupt_inside_a_graph_exits_its_with_blocks(fn, outer_grad):
    # the interrupt lands between two operations inside the block: as in eager, the block's
    # __exit__ puts grad mode (or autocast) back on the way out; the next call is right
    x, y = torch.randn(3, 3), torch.randn(3, 3, requires_grad=True)
    backend = InterruptAt(2)
    compiled = bytegraph.compile(fn, backend=backend)
    state = (torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"))
    with torch.set_grad_enabled(outer_grad):
        with pytest.raises(KeyboardInterrupt):
            compiled(x, y)
        assert torch.is_grad_enabled() is outer_grad
        assert (torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")) == state
        torch.manual_seed(1)
        actual = compiled(x, y)
        torch.manual_seed(1)
        expected = fn(x, y)
    assert same(actual, expected)
    assert backend.graphs == 1


class Interrupting:
    """Raises KeyboardInterrupt (what Ctrl-C raises) from the chosen calls of
    ``hit()``: a real interrupt in the middle of what bytegraph is doing."""

    def __init__(self, at):
        self.calls, self.at = 0, at

    def hit(self):
        self.calls += 1
        if self.calls in self.at:
            raise KeyboardInterrupt


def _process_state():
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    return (torch.is_grad_enabled(), sys.getrecursionlimit(), len(_get_current_dispatch_mode_stack()),
            torch._C._len_torch_function_stack(), torch._guards.TracingContext.try_get())


def _interrupted_calls(compiled, args, n=4):
    before, results = _process_state(), []
    for _ in range(n):
        try:
            results.append(compiled(*args))
        except KeyboardInterrupt:
            results.append("interrupted")
        assert _process_state() == before
    return results


def test_an_interrupt_in_a_cached_functions_native_miss_leaves_bytegraph_usable():
    # an lru_cache'd function with constant arguments that changes an object runs natively on its miss
    # (a graph break inside no_grad): the interrupt lands in it and unwinds the compiled call; the next
    # call's miss runs natively again (the entry is guarded on the miss) and is right, and the one after
    # converts the frame again with the hit
    interrupting = Interrupting({1})

    @functools.lru_cache
    def factor(k):
        interrupting.hit()
        return k * 2

    def f(x):
        with torch.no_grad():
            y = x * factor(3)
        return torch.relu(y) + 1

    cnt = CompileCounter()
    x = torch.randn(3, requires_grad=True)
    results = _interrupted_calls(bytegraph.compile(f, backend=cnt), (x,))
    assert results[0] == "interrupted" and same(results[1:], [f(x)] * 3)
    assert cnt.frame_count == 3 and break_types() == ["lru_cache call"]


class SignalInGuard:
    """Sends this process SIGINT (Ctrl-C's signal: the interpreter's handler
    raises KeyboardInterrupt) at the ``line``-th line executed of the ``nth``
    run of a generated guard function of ``fn_name``'s cache entries that
    ``caller`` (a function of bytegraph's) makes; ``line=None`` only counts
    the lines of that run. ``landed`` names the guard function it was raised in."""

    def __init__(self, fn_name, caller, nth, line=None):
        self.filename, self.caller, self.nth, self.line = f"<bytegraph guards for {fn_name}>", caller, nth, line
        self.runs, self.lines, self.landed = 0, 0, None

    def __enter__(self):
        self.previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.settrace(self._call)
        return self

    def __exit__(self, *exc):
        sys.settrace(None)
        signal.signal(signal.SIGINT, self.previous)

    def _call(self, frame, event, arg):
        if frame.f_code.co_filename != self.filename or frame.f_back.f_code.co_name != self.caller:
            return None
        self.runs += 1
        return self._line if self.runs == self.nth else None

    def _line(self, frame, event, arg):
        if event == "line":
            self.lines += 1
            if self.lines == self.line:
                self.landed = frame.f_code.co_name.lstrip("_")
                signal.raise_signal(signal.SIGINT)  # (the handler's KeyboardInterrupt leaves tracing off)
        return self._line


def _many_guards(x, ts, cfg):
    y = x * cfg["k"]
    for t in ts:
        y = y + t
    return y - cfg["b"]


_SIZES = (3, 3, 4, 5, 5)
#: (the caller of a guard function, its run, the guard function): the check of the second call (a
#: hit) and of the third (a new size: it fails); on that miss, reading the guard that failed and
#: the inputs' sizes (automatic dynamic); the check's timing after the first compile (the compile
#: report's guard cost)
GUARD_RUNS = [("hit", 1, "guard"), ("hit", 2, "guard"), ("first_failure", 1, "first_failure"),
              ("observe", 1, "observe"), ("seconds_per_call", 1, "guard")]


def _guarded_calls(fn):
    """Calls of ``fn`` on the sizes of :data:`_SIZES` (a compile, a hit, a miss that compiles a
    dynamic entry, its hits); a call interrupted is made again. Its results, and the sizes of the
    calls interrupted."""
    results, interrupted, before = [], [], _process_state()
    for n in _SIZES:
        args = (torch.full((n,), 2.0), [torch.full((n,), float(i)) for i in range(6)], {"k": 1.5, "b": 0.5})
        try:
            results.append(fn(*args))
        except KeyboardInterrupt:
            interrupted.append(n)
            assert _process_state() == before
            results.append(fn(*args))
    return results, interrupted


@pytest.mark.parametrize("caller, run, function", GUARD_RUNS)
def test_an_interrupt_during_a_guard_check_leaves_the_caches_consistent(caller, run, function):
    # a real SIGINT at the first, a middle and the last line of a guard function: the
    # KeyboardInterrupt reaches the caller and leaves nothing half done (the cache's entries, the
    # automatic-dynamic record, the compile lock, the process state): the call made again, and
    # every call after, returns what eager returns
    expected, _ = _guarded_calls(_many_guards)
    with SignalInGuard("_many_guards", caller, run) as count:
        _guarded_calls(bytegraph.compile(_many_guards, backend=CompileCounter()))
    assert count.lines > 5  # (the run exists, and has lines to land on)
    for line in sorted({1, count.lines // 2, count.lines}):
        bytegraph.reset()
        cnt = CompileCounter()
        compiled = bytegraph.compile(_many_guards, backend=cnt)
        with SignalInGuard("_many_guards", caller, run, line) as signal_at:
            actual, interrupted = _guarded_calls(compiled)
        assert signal_at.landed == function and len(interrupted) == 1
        assert same(actual, expected)
        # two entries, the static one and the dynamic one; an interrupt in the timing of a new
        # entry's guard ends that compile, as anywhere in it (the call made again compiles again)
        assert cnt.frame_count == 2 + (caller == "seconds_per_call")
        assert len(compiled._bytegraph_cache.entries) == 2
        assert _free_in_another_thread(bytegraph.runtime.cache.COMPILE_LOCK)


def _free_in_another_thread(lock):
    """Whether another thread can take ``lock`` (an RLock: this thread always can)."""
    taken = []

    def take():
        if lock.acquire(timeout=5):
            taken.append(True)
            lock.release()

    other = threading.Thread(target=take)
    other.start()
    other.join()
    return taken == [True]


# ---- user code that raises while bytegraph runs it ------------------------------------------------

class Switch:
    """Makes the objects below raise from their special methods while ``on``."""

    on = False


class Key:
    def __hash__(self):
        if Switch.on:
            raise TypeError("unhashable now")
        return 7

    def __eq__(self, other):
        if Switch.on:
            raise ValueError("no comparing now")
        return self is other


class Colliding(Key):
    def __hash__(self):
        return 7  # the same hash as a Key: looking one up compares with __eq__


class WithProperty:
    @property
    def scale(self):
        if Switch.on:
            raise RuntimeError("property failed")
        return 2.0


class Dynamic:
    def __getattr__(self, name):
        if Switch.on:
            raise KeyError(name)
        return 3.0


class Sized:
    def __len__(self):
        if Switch.on:
            raise OverflowError("no length")
        return 2


class Index:
    def __index__(self):
        if Switch.on:
            raise IndexError("no index")
        return 1


class Truthy:
    def __bool__(self):
        if Switch.on:
            raise ZeroDivisionError("no truth")
        return True


class Formatted:
    def __format__(self, spec):
        if Switch.on:
            raise LookupError("no format")
        return "f"


KEY, OTHER = Key(), Colliding()
CASES = {
    "dict key __hash__": (lambda x, o: x + o[KEY], lambda: {KEY: torch.ones(3)}),
    "dict key __eq__": (lambda x, o: x + o[OTHER], lambda: {KEY: torch.zeros(3), OTHER: torch.ones(3)}),
    "set element __hash__": (lambda x, o: x + (KEY in o), lambda: {KEY}),
    "key in dict": (lambda x, o: x + (KEY in o), lambda: {KEY: 1}),
    "property": (lambda x, o: x * o.scale, WithProperty),
    "__getattr__": (lambda x, o: x * o.anything, Dynamic),
    "__len__": (lambda x, o: x * len(o), Sized),
    "__index__": (lambda x, o: x * [1.0, 2.0][o], Index),
    "__bool__": (lambda x, o: x + 1 if o else x - 1, Truthy),
    "__format__": (lambda x, o: x * len(f"{o}"), Formatted),
}


def _outcomes(fn, make):
    log, results = [], []

    def with_side_effect(x, o):
        log.append(len(log))
        return fn(x, o)

    obj = make()
    for on in (False, True, False, True):
        Switch.on = on
        try:
            results.append(with_side_effect(torch.ones(3), obj))
        except Exception as e:  # noqa: BLE001 (the exception type is what is compared)
            results.append(type(e).__name__)
        finally:
            Switch.on = False
    return results, log


@pytest.mark.parametrize("case", sorted(CASES))
def test_user_code_raising_while_bytegraph_runs_it_raises_as_eager(case):
    # a guard that reads through it fails (a recompile), a trace that runs it breaks there and
    # runs that instruction natively: never an internal error (the conftest raises those)
    fn, make = CASES[case]
    expected = _outcomes(fn, make)
    actual = _outcomes(bytegraph.compile(fn, backend="eager"), make)
    assert same(actual, expected)
    assert isinstance(expected[0][1], str)  # (the second call raises in eager)


def test_a_hash_raising_while_tracing_is_a_graph_break_there():
    def f(x, d):
        y = x * 2
        return y + d[KEY]

    cnt = CompileCounter()
    compiled = bytegraph.compile(f, backend=cnt)
    d = {KEY: torch.ones(3)}
    Switch.on = True
    try:
        with pytest.raises(TypeError, match="unhashable now"):
            compiled(torch.ones(3), d)
    finally:
        Switch.on = False
    assert break_types() == ["user code raised while tracing"]
    assert cnt.frame_count == 1  # the graph before the lookup
    assert same(compiled(torch.ones(3), d), f(torch.ones(3), d))


# ---- backends that fail --------------------------------------------------------------------------

def _pair(x, y):
    return x * 2 + y, x - y


def _raising(gm, example_inputs):
    raise RuntimeError("backend boom")


def _sleeping(gm, example_inputs):
    time.sleep(30)
    return gm.forward


def _spinning(gm, example_inputs):
    while True:
        pass


def _swallowing(gm, example_inputs):  # catches Exception: the timeout still stops it
    while True:
        try:
            time.sleep(30)
        except Exception:  # noqa: BLE001
            pass


def _not_callable(gm, example_inputs):
    return 42


def _one_argument(gm, example_inputs):
    return lambda a: (a, a)


def _one_output(gm, example_inputs):
    return lambda *args: (args[0],)


def _three_outputs(gm, example_inputs):
    return lambda *args: (*args, args[0])


def _bare_tensor(gm, example_inputs):
    return lambda *args: args[0]


FAILING_BACKENDS = {
    _raising: "backend boom", _sleeping: "backend_timeout", _spinning: "backend_timeout",
    _swallowing: "backend_timeout", _not_callable: "not a callable", _one_argument: "cannot take the graph's 2 inputs",
    _one_output: "returned 1 values for a graph of 2 outputs", _three_outputs: "returned 3 values",
    _bare_tensor: "returned Tensor for a graph of 2 outputs",
}


@pytest.mark.parametrize("backend", list(FAILING_BACKENDS), ids=lambda b: b.__name__.strip("_"))
def test_a_failing_backend_is_reported_once_and_the_frame_runs_natively(backend):
    x, y = torch.randn(3), torch.randn(3)
    compiled = bytegraph.compile(_pair, backend=backend)
    start = time.monotonic()
    with bytegraph.config.patch(raise_on_backend_error=False, backend_timeout=0.5), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [compiled(x, y) for _ in range(3)]
    assert time.monotonic() - start < 20  # (a hang would be stopped by the test's own budget)
    assert same(results, [_pair(x, y)] * 3)
    assert [FAILING_BACKENDS[backend] in str(w.message) for w in caught] == [True]
    assert signal.getsignal(signal.SIGALRM) is signal.SIG_DFL


@pytest.mark.parametrize("backend", [_raising, _sleeping, _not_callable, _one_argument], ids=lambda b: b.__name__)
def test_a_backend_failing_to_compile_raises_with_raise_on_backend_error(backend):
    with bytegraph.config.patch(backend_timeout=0.5), pytest.raises(bytegraph.BackendCompilerFailed):
        bytegraph.compile(_pair, backend=backend)(torch.randn(3), torch.randn(3))


def test_the_backend_timeout_gives_back_the_users_alarm():
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 30)
        with bytegraph.config.patch(raise_on_backend_error=False, backend_timeout=0.5), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bytegraph.compile(_pair, backend=_sleeping)(torch.randn(3), torch.randn(3))
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < left < 30 and not fired
        assert signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_no_timeout_outside_the_main_thread():
    # a SIGALRM timer exists for the main thread only: a compile in another thread has no limit
    def slow(gm, example_inputs):
        time.sleep(1.0)
        return gm.forward

    results = []
    compiled = bytegraph.compile(_pair, backend=slow)
    with bytegraph.config.patch(backend_timeout=0.2):
        worker = threading.Thread(target=lambda: results.append(compiled(torch.ones(3), torch.ones(3))))
        worker.start()
        worker.join()
    assert same(results, [_pair(torch.ones(3), torch.ones(3))])


def test_backend_timeout_setting_is_checked():
    with pytest.raises(ValueError, match="backend_timeout"):
        bytegraph.config.backend_timeout = -1.0
    with pytest.raises(TypeError, match="backend_timeout"):
        bytegraph.config.backend_timeout = "10"
    with bytegraph.config.patch(backend_timeout=5):  # an int is taken as seconds
        assert bytegraph.config.backend_timeout == 5.0


# ---- the inductor cache folder -------------------------------------------------------------------

_INDUCTOR_PROGRAM = textwrap.dedent("""
    import warnings, torch, bytegraph
    def f(x):
        return torch.sin(x) * 2 + x.cos()
    x = torch.randn(8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = bytegraph.compile(f, backend="inductor")
        outs = [compiled(x), compiled(x)]
    assert all(torch.allclose(out, f(x), atol=1e-5) for out in outs), "wrong result"
    ours = [str(w.message) for w in caught if "bytegraph" in str(w.message)]
    print("OK", len(ours))
    print(*ours, sep="\\n")
""")


def _run_inductor(cache_dir):
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache_dir), "TORCHINDUCTOR_FORCE_DISABLE_CACHES": "0"}
    return subprocess.run([sys.executable, "-c", _INDUCTOR_PROGRAM], env=env, capture_output=True, text=True,
                          timeout=900)


@pytest.mark.slow
def test_a_corrupt_inductor_cache_does_not_break_the_run(tmp_path):
    first = _run_inductor(tmp_path)
    assert first.returncode == 0 and first.stdout.startswith("OK"), first.stderr[-2000:]
    corrupted = 0
    for root, _, files in os.walk(tmp_path):
        for name in files:
            with open(os.path.join(root, name), "wb") as f:
                f.write(b"\x00garbage\xff" * 7)
            corrupted += 1
    assert corrupted
    again = _run_inductor(tmp_path)
    assert again.returncode == 0 and again.stdout.startswith("OK"), again.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.parametrize("where", ["under a file", "a file"])
def test_an_unusable_inductor_cache_folder_does_not_break_the_run(tmp_path, where):
    # torch makes the cache folder as the first trace's FakeTensorMode loads its compiler
    # packages, and cannot (NotADirectoryError, FileExistsError): the program still runs, eager's
    # results, with one warning that names the folder's setting (the frame runs natively from
    # then on: no second warning)
    a_file = tmp_path / "file"
    a_file.write_text("a file where the cache folder should be")
    folder = a_file / "cache" if where == "under a file" else a_file
    result = _run_inductor(folder)
    assert result.returncode == 0 and result.stdout.startswith("OK 1\n"), result.stderr[-2000:]
    assert "TORCHINDUCTOR_CACHE_DIR" in result.stdout and str(folder) in result.stdout
