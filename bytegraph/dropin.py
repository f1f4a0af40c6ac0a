"""torch's compiler entry points, served by bytegraph (what ``bytegraph run`` installs).

Within :func:`serving_torch_compile`:

- ``torch.compile`` is :func:`torch_compile`, bytegraph's compile with
  torch.compile's signature; ``nn.Module.compile`` calls it, so it compiles
  the module's call in place as torch's does;
- the frontend's ``reset`` (and ``torch.compiler.reset``, which calls it) is
  :func:`bytegraph.reset`;
- the frontend's ``explain`` is :func:`explain`, bytegraph's explain;
- the frontend's ``optimize(backend, nopython=...)`` is :func:`optimize`
  (the module holding these is named in :mod:`bytegraph.compat` only).

Everything else of torch.compile's user surface is honoured where bytegraph
reads it (:mod:`bytegraph.compat`): tensor marks, the stance, settings changed
in the frontend's ``config``, ``allow_in_graph`` and friends.
"""
from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

from bytegraph import compat
from bytegraph.api import compile as bytegraph_compile
from bytegraph.api import reset
from bytegraph.explain import explain as bytegraph_explain


def torch_compile(model: Callable | None = None, **kwargs: Any) -> Any:
    """``torch.compile(model, *, fullgraph, dynamic, backend, mode, options, name,
    disable, recompile_limit, isolate_recompiles, shapes_spec)``, served by
    :func:`bytegraph.compile` (the same keywords; torch.compile's default backend
    when ``backend`` is not given)."""
    return bytegraph_compile(model, **kwargs)


def explain(fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """The frontend's ``explain(fn)(*args)``, and its older form ``explain(fn, *args)``."""
    run = bytegraph_explain(fn)
    return run(*args, **kwargs) if args or kwargs else run


class optimize:
    """The frontend's ``optimize(backend, nopython=False, dynamic=None, disable=False)``:
    applied to a function or module, it compiles it with bytegraph. Its use as a
    context manager (compile every frame run in the block) needs a frame hook,
    which bytegraph does not install: the block runs eagerly, with a warning."""

    def __init__(self, backend: Any = "inductor", *, nopython: bool = False, dynamic: bool | None = None,
                 disable: bool = False, **ignored: Any):
        self.kwargs = {"backend": backend, "fullgraph": nopython, "dynamic": dynamic, "disable": disable}

    def __call__(self, fn: Callable) -> Any:
        return bytegraph_compile(fn, **self.kwargs)

    def __enter__(self) -> None:
        compat.unsupported(f"with {compat.FRONTEND}.optimize(...):", "bytegraph compiles the functions it is given, "
                           "not every frame run in a block; the block runs eagerly")

    def __exit__(self, *exc: Any) -> None:
        return None


@contextlib.contextmanager
def serving_torch_compile() -> Iterator[None]:
    """Within the block, torch's compiler entry points are bytegraph's (see the module docstring)."""
    replacements = {"compile": torch_compile, "reset": reset, "explain": explain, "optimize": optimize}
    with compat.serving(replacements):
        yield
