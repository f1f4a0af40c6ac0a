"""A module whose class overrides ``__call__`` (a library's kernel filling a
default argument, an aggregation adding ``dim_size``): after a graph break,
what runs natively is that ``__call__`` with eager's arguments, never
``forward`` with ``__call__``'s."""
import io

import pytest
import torch
from torch import nn

import bytegraph
from tests.helpers import check, check_module

SINK = io.StringIO()


class Kernel(nn.Module):
    def __call__(self, x1, x2=None):  # fills x2, then Module.__call__ (with a graph break first)
        print(file=SINK)
        return super().__call__(x1, x1 if x2 is None else x2)

    def forward(self, x1, x2):
        return x1 @ x2.T


class Aggregation(nn.Module):
    def __call__(self, x, index, **kwargs):  # a size read from the data
        return super().__call__(x, index, dim_size=int(index.max()) + 1, **kwargs)

    def forward(self, x, index, dim_size):
        return x.new_zeros(dim_size, x.shape[1]).index_add_(0, index, x)


class AggregationInTry(Aggregation):
    def __call__(self, x, index, **kwargs):
        try:
            return super().__call__(x, index, **kwargs)
        except RuntimeError:
            raise


class Scaled(nn.Module):
    def __call__(self, x, scale=2.0):  # no break: traced whole
        return super().__call__(x * scale)

    def forward(self, x):
        return x + 1


class Parent(nn.Module):
    def __init__(self):
        super().__init__()
        self.kernel, self.aggregation = Kernel(), Aggregation()

    def forward(self, x, index):
        return self.kernel(x).sum() + self.aggregation(x, index)


#: name -> (module class, the compiled function of (module, x, index) or None: the module compiled)
CASES = {
    "kernel": (Kernel, lambda m, x, i: m(x) + 1),
    "aggregation": (Aggregation, lambda m, x, i: m(x, i) * 2),
    "aggregation in try": (AggregationInTry, lambda m, x, i: m(x, i) * 2),
    "no break": (Scaled, lambda m, x, i: m(x) * 2),
    "submodules": (Parent, lambda m, x, i: m(x, i)),
    "the module compiled": (Kernel, None),
}


#: (graphs, graph breaks recorded, one per frame that met each) of each case
GRAPHS_AND_BREAKS = {
    ('kernel', False): (2, ['print'] * 3),
    ('kernel', True): (2, ['print'] * 3),
    ('aggregation', False): (3, ['data-dependent tensor method'] * 3),
    ('aggregation', True): (1, []),
    ('aggregation in try', False): (3, ['data-dependent tensor method'] * 4),
    ('aggregation in try', True): (1, []),  # (graph ops under an except clause stay in the graph)
    ('no break', False): (1, []),
    ('no break', True): (1, []),
    ('submodules', False): (5, ['print'] * 4 + ['data-dependent tensor method'] * 2),
    ('submodules', True): (2, ['print'] * 4),
    ('the module compiled', False): (1, ['print'] * 2),
    ('the module compiled', True): (1, ['print'] * 2),
}


@pytest.mark.parametrize("capture", [False, True])
@pytest.mark.parametrize("case", list(CASES))
def test_a_module_call_override_runs_with_eagers_arguments(case, capture):
    cls, use = CASES[case]
    graphs, gb_types = GRAPHS_AND_BREAKS[case, capture]
    counts = dict(graphs=graphs, breaks=len(set(gb_types)), gb_types=sorted(set(gb_types), key=gb_types.index))
    with bytegraph.config.patch(capture_scalar_outputs=capture):
        if use is None:
            check_module(cls, torch.randn(4, 3), backend="eager", **counts)
        else:
            module = cls()
            check(lambda x, i: use(module, x, i), torch.randn(4, 3), torch.tensor([0, 2, 2, 1]), backend="eager",
                  **counts)
