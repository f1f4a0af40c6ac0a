"""The differential fuzzer's quick tier: a fixed-seed batch of generated
programs for the eager and aot_eager backends, and every minimised failure a
campaign found (``make fuzz``), each compared with eager on results,
requires_grad, exceptions, mutated inputs, globals and torch state."""
import pytest

from tools.fuzz.differential import compare, silence
from tools.fuzz.programs import generate, render

BACKENDS = ["eager", "aot_eager"]
QUICK_SEEDS = range(30)


@pytest.mark.parametrize("backend", BACKENDS)
def test_fixed_seed_batch(backend):
    failures = []
    for seed in QUICK_SEEDS:
        with silence():
            diff = compare(render(generate(seed)), seed, backend)
        if diff is not None:
            failures.append((seed, diff))
    assert failures == []


def test_generator_is_deterministic_and_varied():
    assert generate(3) == generate(3)
    assert len({render(generate(s)) for s in QUICK_SEEDS}) == len(QUICK_SEEDS)


#: minimised failures of fuzzing campaigns: (inputs seed, program body)
REGRESSIONS = {
    # a method of a class made in a factory appends to the factory's list (lost: NOTES stayed [])
    "factory_class_method_appends": (8, """\
    t0 = Noter().note(x)
    try:
        t1 = t0.index_select(0, idx)
    except IndexError:
        t1 = t0 + 0.25
    x.addcmul_(t1, t1, value=0.5)
    return (x,)
"""),
    # side effect before an index_select that raises (log stayed []); the in-place write to an
    # expanded tensor raises in eager and passed silently under AOTAutograd
    "write_to_expanded_after_raising_op": (71, """\
    log.append('before t1')
    t1 = x.index_select(0, idx).expand(3, 4)
    with torch.no_grad():
        t4 = t1 + 1
        t1.add_(0.5)
    return (x, t1)
"""),
    # an index_select nothing reads, out of range: eager raises, AOTAutograd removed it as dead code
    "dead_index_select_out_of_range": (228, """\
    lst = []
    lst.extend([x, y])
    t0 = lst.pop() - lst[0]
    with torch.enable_grad():
        t1 = t0 * y
    log.append('before t3')
    t3 = t1.index_select(0, idx).expand(3, 4)
    return (t0, lst,)
"""),
    # an input written in place before an index_select that raises: the eager backend had written
    # it, so the frame was not rerun and the append before it was lost
    "input_written_before_raising_op": (508, """\
    y.t()[1].fill_(2.0)
    log.append('before t1')
    t1 = x.index_select(0, idx).expand(3, 4)
    return (x, y)
"""),
    # a random op nothing reads still advances the generator (the next draw differed under AOTAutograd)
    "dead_random_op_advances_the_generator": (348, """\
    t1 = torch.where(y > 0, x, 0.5)
    t2 = t1 + torch.rand(3, 4)
    t3 = x + torch.rand(3, 4)
    return (t3,)
"""),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_minimised_campaign_failures(name, backend):
    seed, body = REGRESSIONS[name]
    source = render([[line[4:] for line in body.splitlines()]])
    with silence():
        assert compare(source, seed, backend) is None
