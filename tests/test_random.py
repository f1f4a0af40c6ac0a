"""Random ops: a compiled call draws the same numbers as eager for the same
seed and leaves the generator where eager leaves it (the eager and aot_eager
backends; inductor with ``fallback_random``, as in torch.compile, whose
inductor otherwise uses its own generator)."""
import pytest
import torch
from torch import nn

import bytegraph
from bytegraph.testing import CompileCounter, same


def draws(x):
    a = x + torch.rand(3)
    b = torch.nn.functional.dropout(x, 0.5)
    c = torch.randn_like(x) * torch.randint(0, 10, (3,))
    return a, b, c, torch.randperm(5), torch.bernoulli(torch.full((4,), 0.5)), torch.normal(0.0, 1.0, (2,))


def reseeds(x):
    torch.manual_seed(7)
    y = x * torch.rand(2)
    torch.manual_seed(7)
    return y, x * torch.rand(2)


def seeded_run(fn, x):
    torch.manual_seed(0)
    out = fn(x)
    return out, torch.rand(1)  # the generator's state after the call


@pytest.mark.parametrize("fn", [draws, reseeds])
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_random_ops_draw_eagers_numbers(fn, backend):
    x = torch.ones(3) if fn is draws else torch.ones(2)
    expected = seeded_run(fn, x)
    compiled = bytegraph.compile(fn, backend=backend)
    for _ in range(2):
        assert same(seeded_run(compiled, x), expected)


def test_dropout_in_training_draws_eagers_mask():
    torch.manual_seed(1)
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).train()
    x = torch.randn(8, 4)
    expected = seeded_run(model, x)
    cnt = CompileCounter()
    assert same(seeded_run(bytegraph.compile(model, backend=cnt), x), expected)
    assert cnt.frame_count == 1


def test_inductor_with_fallback_random_draws_eagers_numbers():
    x = torch.ones(3)
    expected = seeded_run(draws, x)
    compiled = bytegraph.compile(draws, backend="inductor", options={"fallback_random": True})
    assert same(seeded_run(compiled, x), expected)


def test_manual_seed_breaks_once_at_the_users_call():
    # torch wraps manual_seed so compilers run it natively: one break per call, at the user's line
    explanation = bytegraph.explain(reseeds)(torch.ones(2))
    assert explanation.graph_count == 2
    assert [r.gb_type for r in explanation.break_reasons] == ["function disabled for compilers"] * 2
    assert all("manual_seed" in r.reason and "test_random.py" in r.user_stack[0].filename
               for r in explanation.break_reasons)
