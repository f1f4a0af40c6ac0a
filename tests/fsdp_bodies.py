"""Bodies of the FSDP2 (``fully_shard``) tests, run in each process by ``dist_helpers.spawn``."""
from __future__ import annotations

import json

import torch
from torch.distributed.fsdp import fully_shard

import bytegraph
from bytegraph.backends.builtin import aot_eager
from bytegraph.runtime import metrics

STEPS = 3


class Block(torch.nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.linear = torch.nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x)) + x


class Model(torch.nn.Module):
    def __init__(self, width: int = 16, depth: int = 3):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block(width) for _ in range(depth))
        self.head = torch.nn.Linear(width, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def train(rank: int, case: str, optimizer: str, compile_fn) -> tuple[list, list]:
    """Losses of STEPS steps and the full parameters after them.

    Cases: ``per_layer`` (every block and the root sharded, each block compiled),
    ``root`` (every block and the root sharded, the root compiled),
    ``root_only`` (only the root sharded and compiled).
    """
    torch.manual_seed(0)
    model = Model()
    if case != "root_only":
        for block in model.blocks:
            fully_shard(block)
    fully_shard(model)
    run = model
    if compile_fn is not None and case == "per_layer":
        for i, block in enumerate(model.blocks):
            model.blocks[i] = compile_fn(block)
    elif compile_fn is not None:
        run = compile_fn(model)
    opt = (torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9) if optimizer == "sgd"
           else torch.optim.AdamW(model.parameters(), lr=0.01))
    losses = []
    for step in range(STEPS):
        g = torch.Generator().manual_seed(100 * step + rank)
        x, y = torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(run(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
    return losses, [p.full_tensor().detach() for p in model.parameters()]


def compare_all(rank: int, world: int, out: str) -> None:
    """Eager vs bytegraph (aot_eager) for every case and optimizer: same losses
    and parameters; rank 0 writes graphs and graph breaks per case to ``out``.
    ``per_layer`` and ``root_only`` compile with ``fullgraph=True``."""
    found = {}
    for case in ("per_layer", "root", "root_only"):
        for optimizer in ("sgd", "adamw"):
            graphs = []

            def backend(gm, example_inputs):
                graphs.append(gm)
                return aot_eager(gm, example_inputs)

            expected = train(rank, case, optimizer, None)
            bytegraph.reset()
            with metrics.recording() as recorder:
                # fullgraph where FSDP's hooks run around the compiled module (no break expected)
                fullgraph = case != "root"
                actual = train(rank, case, optimizer,
                               lambda m: bytegraph.compile(m, backend=backend, fullgraph=fullgraph))
            for kind, e_list, a_list in (("loss", expected[0], actual[0]), ("param", expected[1], actual[1])):
                assert len(a_list) == len(e_list)
                for i, (e, a) in enumerate(zip(e_list, a_list)):
                    torch.testing.assert_close(a, e, msg=lambda m, k=kind, i=i: f"{case} {optimizer} {k} {i}: {m}")
            breaks = metrics.distinct(recorder.breaks)  # each break once, as explain counts them
            kinds = sorted({b.gb_type for b in breaks})
            found[f"{case}-{optimizer}"] = {"graphs": len(graphs), "breaks": kinds, "break_count": len(breaks)}
    if rank == 0:
        with open(out, "w") as f:
            json.dump(found, f)
