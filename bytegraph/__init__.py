"""bytegraph: a pure-Python JIT frontend for PyTorch.

It captures programs into ``torch.fx`` graphs by symbolically executing CPython
bytecode, installs guards, and runs the graphs through any ``torch.compile``
backend::

    import bytegraph
    model = bytegraph.compile(model, backend="inductor")
"""
import sys as _sys
import time as _time

_start = _time.perf_counter()
_torch_imported = "torch" in _sys.modules
import torch as _torch  # noqa: E402,F401  (timed apart from bytegraph's own modules)

_torch_seconds = _time.perf_counter() - _start

from bytegraph import backends as _backends  # noqa: E402,F401  (registers the built-in backends)
from bytegraph import testing  # noqa: F401  (bytegraph.testing.CompileCounter without a separate import)
from bytegraph.api import compile, mark_dynamic, mark_static, maybe_mark_dynamic, reset
from bytegraph.backends.registry import list_backends, register_backend
from bytegraph.breaks import BackendCompilerFailed, Unsupported, error_on_graph_break
from bytegraph.config import config
from bytegraph.explain import ExplainOutput, explain
from bytegraph.logs import set_logs
from bytegraph.report import write_report
from bytegraph.runtime.wrappers import OptimizedModule  # noqa: E402

from bytegraph import imports as _imports  # noqa: E402

if not _torch_imported:
    _imports.record("torch", _torch_seconds, at_startup=True)
_imports.record("bytegraph", _time.perf_counter() - _start - _torch_seconds, at_startup=True)

__all__ = [
    "compile", "reset", "explain", "ExplainOutput", "mark_dynamic", "maybe_mark_dynamic", "mark_static", "list_backends", "register_backend", "Unsupported",
    "BackendCompilerFailed", "error_on_graph_break", "config", "set_logs", "OptimizedModule", "write_report",
]
