"""Random ops: a compiled call draws the same numbers as eager for the same
seed and leaves the generator where eager leaves it (the eager and aot_eager
backends; inductor with ``fallback_random``, as in torch.compile, whose
inductor otherwise uses its own generator)."""
import pytest
import torch
from torch import nn

import bytegraph
from bytegraph.backends.builtin import inductor_with
from tests.helpers import check, check_module


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


@pytest.mark.parametrize("fn", [draws, reseeds])
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_random_ops_draw_eagers_numbers(fn, backend):
    # check runs both sides from the same random state and compares the state each leaves
    x = torch.ones(3) if fn is draws else torch.ones(2)
    if fn is draws:
        check(fn, calls=[(x,), (x,)], backend=backend)
    else:  # each manual_seed runs natively (see below)
        check(fn, calls=[(x,), (x,)], backend=backend, graphs=2, breaks=2,
              gb_types=["function disabled for compilers"] * 2)


# a draw nothing live reads but a dead operation giving several tensors (a tuple, a named tuple)
DEAD_MULTI_OUTPUT_READERS = {
    "unbind": lambda t: torch.stack(t.unbind(0)),
    "split": lambda t: torch.cat(t.split(1)),
    "chunk": lambda t: t.chunk(2, dim=1)[0],
    "max with dim": lambda t: torch.max(t, dim=0).values,
    "sort": lambda t: t.sort(dim=1)[1],
    "topk": lambda t: t.topk(2).indices,
}


@pytest.mark.parametrize("name", DEAD_MULTI_OUTPUT_READERS)
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_dead_draw_read_only_by_a_dead_multi_output_op_advances_the_generator(name, backend):
    reader = DEAD_MULTI_OUTPUT_READERS[name]

    def f(x):
        reader(x + torch.rand(3, 4))  # dead: a backend eliminating it would not advance the generator
        return x + torch.rand(3, 4)

    check(f, calls=[(torch.ones(3, 4),), (torch.ones(3, 4),)], backend=backend)


def test_dropout_in_training_draws_eagers_mask():
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)).train()
    check_module(model, torch.randn(8, 4))


def test_inductor_with_fallback_random_draws_eagers_numbers():
    check(draws, torch.ones(3), backend=inductor_with(None, {"fallback_random": True}))


def test_manual_seed_breaks_once_at_the_users_call():
    # torch wraps manual_seed so compilers run it natively: one break per call, at the user's line
    explanation = bytegraph.explain(reseeds)(torch.ones(2))  # (the counts: test_random_ops_draw_eagers_numbers)
    assert all("manual_seed" in r.reason and "test_random.py" in r.user_stack[0].filename
               for r in explanation.break_reasons)
