"""The generated source of a GraphModule, dropped when the module is freed.

torch.fx compiles each GraphModule's ``forward`` from generated source that it
files under a fresh ``<eval_with_key>.N`` name in its loader's cache and in
``linecache`` (so tracebacks show it), and never removes it: a process that
compiles and drops many graphs would keep every one's source. The graphs
bytegraph builds give theirs back when they are freed.
"""
from __future__ import annotations

import linecache
import weakref

import torch
from torch.fx import graph_module


def release_source_when_freed(gm: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """``gm``, whose ``forward`` source leaves fx's caches when ``gm`` is freed."""
    key = type(gm).forward.__code__.co_filename
    if key.startswith("<eval_with_key>"):
        weakref.finalize(gm, _release, key)
    return gm


def _release(key: str) -> None:
    graph_module._loader.eval_cache.pop(key, None)
    linecache.cache.pop(key, None)
