"""Backends: the registry and torch's own compilers (eager, aot_eager, inductor)."""
from bytegraph.backends import builtin  # noqa: F401  (registers eager, aot_eager, inductor)
