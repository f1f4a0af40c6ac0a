"""Log channels of bytegraph, on top of Python ``logging``.

Channels (each is the logger ``bytegraph.<channel>``):

- ``graph_breaks``: every graph break, with gb_type and user location;
- ``recompiles``: every recompile, with the guard that failed;
- ``guards``: the guards of each new cache entry, in words, grouped by value;
- ``graph``: each captured graph, as a table;
- ``bytecode``: original and transformed bytecode of each frame.

Turn channels on with the environment variable
``BYTEGRAPH_LOGS=graph_breaks,recompiles`` (read at import) or
``bytegraph.set_logs("graph", "guards")`` (mirrors ``TORCH_LOGS`` /
``torch._logging.set_logs``). Enabled channels log at INFO to stderr.
"""
from __future__ import annotations

import logging
import os
import sys

CHANNELS = ("graph_breaks", "recompiles", "guards", "graph", "bytecode")

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


def _from_env() -> None:
    spec = os.environ.get("BYTEGRAPH_LOGS", "")
    names = [name.strip() for name in spec.split(",") if name.strip()]
    set_logs(*names)


_from_env()
