"""Running a test body in real torch.distributed processes (gloo, CPU, localhost).

:func:`spawn` starts ``world_size`` processes with ``torch.multiprocessing``,
each joining a gloo process group on 127.0.0.1 (a free port found by binding
port 0), runs ``body(rank, world_size, *args)`` and destroys the group even when
the body raises. The parent waits at most ``timeout`` seconds, then kills the
processes and fails; an exception in a worker fails the test with the worker's
traceback. Bodies live in importable modules (spawned processes import them).
"""
from __future__ import annotations

import datetime
import os
import socket
import time
from typing import Any, Callable

import torch.distributed as dist
import torch.multiprocessing as mp


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _entry(rank: int, world_size: int, port: int, body: Callable, args: tuple) -> None:
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")  # keep gloo's own connections on loopback
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world_size,
        timeout=datetime.timedelta(seconds=60),
    )
    try:
        body(rank, world_size, *args)
    finally:
        dist.destroy_process_group()


def spawn(body: Callable, *args: Any, world_size: int = 2, timeout: float = 120.0) -> None:
    """Run ``body(rank, world_size, *args)`` in ``world_size`` gloo processes.

    Raises:
        TimeoutError: when the processes have not all finished after ``timeout`` seconds.
        torch.multiprocessing.ProcessRaisedException: when a body raised.
    """
    context = mp.start_processes(
        _entry, args=(world_size, free_port(), body, args), nprocs=world_size, join=False, start_method="spawn"
    )
    deadline = time.monotonic() + timeout
    try:
        while not context.join(timeout=max(0.0, deadline - time.monotonic())):
            if time.monotonic() >= deadline:
                raise TimeoutError(f"distributed test did not finish in {timeout} s")
    finally:
        for process in context.processes:
            if process.is_alive():
                process.kill()
                process.join()
