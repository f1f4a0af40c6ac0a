"""The two frontends a sweep runs under, each imported only by the process that uses it:
``bytegraph.compile`` and ``torch.compile``, both with ``fullgraph=True``. A frontend
compiles a fresh probe per case (a new code object, after resetting its caches), counts
the graphs it hands the backend, and names a failure: a graph break (its gb_type and
reason) or another error."""
from __future__ import annotations

import re
from typing import Any, Callable

FRONTENDS = ("bytegraph", "torch")
BACKENDS = ("eager", "aot_eager")


def make_probe(fn: Callable) -> Callable:
    """``def probe(*args, **kwargs): return fn(*args, **kwargs)``: a new code object on every
    call (so no frontend cache or recompile limit carries over from another case), ``fn``
    a global of its own namespace."""
    namespace = {"fn": fn}
    exec(compile("def probe(*args, **kwargs):\n    return fn(*args, **kwargs)\n", "<opinfo probe>", "exec"), namespace)
    return namespace["probe"]


class Counting:
    """A backend that counts the graphs it compiles and hands each to ``inner``."""

    def __init__(self, inner: Callable) -> None:
        self.inner = inner
        self.graphs = 0

    def __getattr__(self, name: str) -> Any:  # torch.compile asks a backend for its config
        return getattr(self.inner, name)

    def __call__(self, gm: Any, example_inputs: list) -> Callable:
        self.graphs += 1
        return self.inner(gm, example_inputs)


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


class Bytegraph:
    """bytegraph.compile; a graph break is ``bytegraph.Unsupported``."""

    name = "bytegraph"

    def __init__(self) -> None:
        import bytegraph
        from bytegraph.backends.registry import lookup_backend

        self.bytegraph, self.lookup = bytegraph, lookup_backend

    def compile(self, fn: Callable, backend: str) -> tuple[Callable, Counting]:
        self.bytegraph.reset()
        counter = Counting(self.lookup(backend))
        return self.bytegraph.compile(make_probe(fn), backend=counter, fullgraph=True), counter

    def describe(self, exc: BaseException) -> dict:
        if isinstance(exc, self.bytegraph.Unsupported):
            where = exc.user_stack[-1] if exc.user_stack else None
            return {"outcome": "break", "gb_type": exc.gb_type, "reason": exc.context,
                    "where": f"{where.filename}:{where.lineno} in {where.name}" if where else ""}
        return {"outcome": "error", "reason": f"{type(exc).__name__}: {_first_line(str(exc))}"}


class TorchCompile:
    """torch.compile (TorchDynamo); a graph break is ``torch._dynamo.exc.Unsupported``."""

    name = "torch"

    def __init__(self) -> None:
        import torch
        import torch._dynamo
        from torch._dynamo.backends.registry import lookup_backend

        self.torch, self.dynamo, self.lookup = torch, torch._dynamo, lookup_backend

    def compile(self, fn: Callable, backend: str) -> tuple[Callable, Counting]:
        self.dynamo.reset()
        counter = Counting(self.lookup(backend))
        return self.torch.compile(make_probe(fn), backend=counter, fullgraph=True), counter

    def describe(self, exc: BaseException) -> dict:
        if isinstance(exc, self.dynamo.exc.Unsupported):
            msg = str(getattr(exc, "msg", exc))
            context = re.search(r"Developer debug context: (.*)", msg)
            stack = getattr(exc, "real_stack", None) or []
            where = f"{stack[-1].filename}:{stack[-1].lineno} in {stack[-1].name}" if stack else ""
            return {"outcome": "break", "gb_type": getattr(exc, "gb_type", None) or _first_line(msg),
                    "reason": context.group(1).strip() if context else _first_line(msg), "where": where}
        return {"outcome": "error", "reason": f"{type(exc).__name__}: {_first_line(str(exc))}"}


def load(name: str) -> Bytegraph | TorchCompile:
    """The frontend called ``name`` (one of :data:`FRONTENDS`), imported now."""
    if name not in FRONTENDS:
        raise ValueError(f"unknown frontend {name!r}; expected one of {FRONTENDS}")
    return Bytegraph() if name == "bytegraph" else TorchCompile()
