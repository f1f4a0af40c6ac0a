"""Log channels of bytegraph, on top of Python ``logging``.

Channels (each is the logger ``bytegraph.<channel>``):

- ``graph_breaks``: every graph break, with gb_type and user location;
- ``recompiles``: every recompile, with the guard that failed;
- ``guards``: the guards of each new cache entry, in words, grouped by value;
- ``graph``: each captured graph, as a table;
- ``bytecode``: original and transformed bytecode of each frame;
- ``fake_tensor``: errors a FakeTensor op raised while a frame was traced
  (torch's FakeTensorMode logs them as ERROR with a traceback; during a trace
  they come here instead, since the error is the traced call's: it becomes the
  exception eager raises, or a graph break, and is never lost).

Turn channels on with the environment variable
``BYTEGRAPH_LOGS=graph_breaks,recompiles`` (read at import) or
``bytegraph.set_logs("graph", "guards")`` (mirrors ``TORCH_LOGS`` /
``torch._logging.set_logs``). Enabled channels log at INFO to stderr.
``TORCH_LOGS`` names bytegraph has a channel for (:data:`TORCH_LOG_NAMES`)
turn those on as well, and ``TORCH_COMPILE_DEBUG=1`` turns on every channel;
its other names stay torch's (its backends log them).
"""
from __future__ import annotations

import contextlib
import logging
import os
import sys
from typing import Iterator

import torch

CHANNELS = ("graph_breaks", "recompiles", "guards", "graph", "bytecode", "fake_tensor")

#: ``TORCH_LOGS`` names of torch's frontend logs -> the bytegraph channels that say the same
TORCH_LOG_NAMES = {
    "graph_breaks": ("graph_breaks",), "recompiles": ("recompiles",), "recompiles_verbose": ("recompiles",),
    "guards": ("guards",), "verbose_guards": ("guards",), "graph": ("graph",), "graph_code": ("graph",),
    "graph_sizes": ("graph",), "bytecode": ("bytecode",), "trace_bytecode": ("bytecode",),
    "dynamo": CHANNELS, "+dynamo": CHANNELS,
}

_handler = logging.StreamHandler(sys.stderr)
_handler.setFormatter(logging.Formatter("[bytegraph.%(channel)s] %(message)s"))


class _ChannelFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.channel = record.name.rsplit(".", 1)[-1]
        return True


_handler.addFilter(_ChannelFilter())


def get(channel: str) -> logging.Logger:
    """The logger of one channel (``bytegraph.<channel>``)."""
    return logging.getLogger(f"bytegraph.{channel}")


def enabled(channel: str) -> bool:
    """Whether ``channel`` would emit an INFO record (cheap check before formatting)."""
    return get(channel).isEnabledFor(logging.INFO)


def set_logs(*channels: str) -> None:
    """Enable exactly ``channels`` (others are reset to WARNING).

    Raises:
        ValueError: when a name is not one of :data:`CHANNELS`.
    """
    unknown = [c for c in channels if c not in CHANNELS]
    if unknown:
        raise ValueError(f"unknown log channel(s) {unknown}; choose from {list(CHANNELS)}")
    for channel in CHANNELS:
        logger = get(channel)
        logger.setLevel(logging.INFO if channel in channels else logging.WARNING)
        if _handler not in logger.handlers:
            logger.addHandler(_handler)
        logger.propagate = False


def channels_from_env(environ: dict[str, str]) -> list[str]:
    """The channels ``BYTEGRAPH_LOGS``, ``TORCH_LOGS`` and ``TORCH_COMPILE_DEBUG`` ask for."""
    if environ.get("TORCH_COMPILE_DEBUG", "") not in ("", "0"):
        return list(CHANNELS)
    names = [n.strip() for n in environ.get("BYTEGRAPH_LOGS", "").split(",") if n.strip()]
    for name in environ.get("TORCH_LOGS", "").split(","):
        names += [c for c in TORCH_LOG_NAMES.get(name.strip(), ()) if c not in names]
    return names


_tracing = 0


@contextlib.contextmanager
def tracing() -> Iterator[None]:
    """Within the block a frame is traced: FakeTensorMode's error records go to ``fake_tensor``."""
    global _tracing
    _tracing += 1
    try:
        yield
    finally:
        _tracing -= 1


class _FakeTensorErrors(logging.Filter):
    """On torch's FakeTensor logger: while a frame is traced, its records go to
    the ``fake_tensor`` channel instead (see the module docstring)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not _tracing:
            return True
        channel = get("fake_tensor")
        if channel.isEnabledFor(logging.INFO):
            channel.info(record.getMessage(), exc_info=record.exc_info)
        return False


logging.getLogger("torch._subclasses.fake_tensor").addFilter(_FakeTensorErrors())


def _from_env() -> None:
    set_logs(*channels_from_env(dict(os.environ)))


_from_env()


_OWN_FILES = (os.path.dirname(os.path.abspath(__file__)), torch.nn.modules.module.__file__)


def user_stacklevel() -> int:
    """The ``stacklevel`` that attributes a warning made by the caller to the
    first frame outside bytegraph and ``nn.Module.__call__`` (the user's call)."""
    frame, level = sys._getframe(1), 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_OWN_FILES):
        frame, level = frame.f_back, level + 1
    return level
