"""PyTorch Geometric GNNs (``torch_geometric.nn.models``) on random graphs:
message passing through ``MessagePassing.propagate`` (generated, inspected
code) and PyG's scatter aggregations."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from benchmarks.models import Case, Entry, Inputs, register, train_case

PYG = ("torch_geometric",)
FEATURES, CLASSES = 16, 4


def _graph(nodes: int, edges: int) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(nodes, FEATURES), torch.randint(0, nodes, (2, edges))


def _model(cls: str, **extra) -> nn.Module:
    from torch_geometric.nn import models

    return getattr(models, cls)(in_channels=FEATURES, hidden_channels=32, num_layers=2, out_channels=CLASSES,
                                **extra)


def _inference(cls: str, **extra):
    def build() -> Case:
        return Case(_model(cls, **extra).eval(), Inputs(_graph(20, 60)), Inputs(_graph(30, 90)))

    return build


def gcn_train() -> Case:
    """Node classification training step: GCN, cross-entropy over nodes."""
    def batch(nodes: int, edges: int) -> Inputs:
        return Inputs((*_graph(nodes, edges), torch.randint(0, CLASSES, (nodes,))))

    return train_case(_model("GCN"), F.cross_entropy, batch(20, 60), batch(30, 90))


for _cls, _extra, _description in (
    ("GCN", {}, "PyG GCN (GCNConv x2), 20 nodes"),
    ("GAT", {"heads": 2}, "PyG GAT (GATConv x2, 2 heads), 20 nodes"),
    ("GraphSAGE", {}, "PyG GraphSAGE (SAGEConv x2, mean aggregation), 20 nodes"),
    ("GIN", {}, "PyG GIN (GINConv x2 with MLPs), 20 nodes"),
):
    register(Entry(_cls.lower(), _inference(_cls, **_extra), _description, requires=PYG))
register(Entry("gcn_train", gcn_train, "PyG GCN node-classification training step", requires=PYG))
