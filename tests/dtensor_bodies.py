"""Bodies of the DTensor tests, run in each process by ``dist_helpers.spawn``.

Not tests/helpers.check: a DTensor is compared by its placements and its
gathered values (``full_tensor()``, a collective every rank runs), and each
side gets its own DTensors, built twice from the same data."""
from __future__ import annotations

import json

import torch
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Replicate, Shard, distribute_tensor

import bytegraph
from bytegraph.backends.builtin import aot_eager


def from_local_round_trip(x, mesh):
    d = DTensor.from_local(x, mesh, [Shard(0)])
    return d.redistribute(mesh, [Replicate()]).to_local() * 2


def arithmetic(d):
    e = d * 2 + 1
    return e.sum(), e.placements, d.device_mesh.ndim


def gather_then_add(d):
    return d.full_tensor() + d.redistribute(d.device_mesh, [Replicate()]).to_local()


def grad_of_replicated_square(d):
    return (d.redistribute(d.device_mesh, [Replicate()]).to_local() ** 2).sum()


def assert_same(actual, expected):
    """Same types; DTensors with the same placements and full values; tensors close; others equal."""
    assert type(actual) is type(expected), (actual, expected)
    if isinstance(expected, DTensor):
        assert actual.placements == expected.placements
        torch.testing.assert_close(actual.full_tensor(), expected.full_tensor())
    elif isinstance(expected, torch.Tensor):
        torch.testing.assert_close(actual, expected)
        assert actual.requires_grad == expected.requires_grad
    elif isinstance(expected, tuple):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_same(a, e)
    else:
        assert actual == expected


def compare_all(rank: int, world: int, out: str) -> None:
    """Eager vs compiled (aot_eager, fullgraph=True) for every case, plus a
    recompile when the placements of the input change; rank 0 writes graph
    counts to ``out``."""
    mesh = init_device_mesh("cpu", (world,))
    counts: dict[str, int] = {}

    def inputs(name, placements=(Shard(0),)):
        if name == "from_local_round_trip":
            return (torch.arange(8.0).reshape(4, 2) + rank, mesh)
        full = torch.arange(16.0).reshape(8, 2)
        return (distribute_tensor(full, mesh, list(placements)).requires_grad_(name.startswith("grad")),)

    for fn in (from_local_round_trip, arithmetic, gather_then_add, grad_of_replicated_square):
        name = fn.__name__
        graphs = []

        def backend(gm, example_inputs):
            graphs.append(gm)
            return aot_eager(gm, example_inputs)

        compiled = bytegraph.compile(fn, backend=backend, fullgraph=True)
        for placements in ((Shard(0),), (Replicate(),)):
            e_args, c_args = inputs(name, placements), inputs(name, placements)
            expected, actual = fn(*e_args), compiled(*c_args)
            assert_same(actual, expected)
            if name.startswith("grad"):
                expected.backward()
                actual.backward()
                assert e_args[0].grad.placements == c_args[0].grad.placements
                torch.testing.assert_close(c_args[0].grad.full_tensor(), e_args[0].grad.full_tensor())
        counts[name] = len(graphs)
    if rank == 0:
        with open(out, "w") as f:
            json.dump(counts, f)
