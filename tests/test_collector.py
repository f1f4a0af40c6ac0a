"""The garbage collector while a frame converts (``bytegraph/collector.py``): off
while the frame is traced and its guards are built, on while the backend compiles,
and afterwards as the program left it. What these tests read is the collector's
state at points inside the conversion (a spy on the guard builder, the backend),
next to the harness's comparison with eager."""
import gc

import pytest
import bytegraph
import bytegraph.convert as convert
from bytegraph.breaks import BackendCompilerFailed
from tests.helpers import check, t


@pytest.fixture
def seen(monkeypatch):
    """Whether the collector was on: (where, on) pairs, in order."""
    states = []
    original = convert.build_guard_function

    def spy(*args, **kwargs):
        states.append(("guards", gc.isenabled()))
        return original(*args, **kwargs)

    monkeypatch.setattr(convert, "build_guard_function", spy)
    return states


def _recording_backend(states):
    def backend(gm, example_inputs):
        states.append(("backend", gc.isenabled()))
        return gm.forward
    return backend


def fn(x):
    y = x.sin() * 2
    print("a graph break")  # two frames convert: the function and its resume function
    return y + x


def test_paused_while_converting_and_on_for_the_backend(seen):
    assert gc.isenabled()
    check(fn, t(3), graphs=2, breaks=1, backend=_recording_backend(seen))
    assert seen == [("backend", True), ("guards", False), ("backend", True), ("guards", False)]
    assert gc.isenabled()


def test_young_generations_collected_as_the_conversion_ends(seen):
    def callback(phase, info):
        if phase == "start" and info["generation"] >= 1:
            seen.append(("collect", info["generation"]))

    gc.callbacks.append(callback)
    try:
        check(fn, t(3), graphs=2, breaks=1, backend=_recording_backend(seen))
    finally:
        gc.callbacks.remove(callback)
    ends = [i for i, (where, _) in enumerate(seen) if where == "guards"]
    assert len(ends) == 2
    for i in ends:  # the conversion ends after its guards; before the next one's backend, a young collection
        after = seen[i + 1:]
        until = next((j for j, (where, _) in enumerate(after) if where == "backend"), len(after))
        assert any(where == "collect" for where, _ in after[:until]), seen


def test_a_program_that_switched_it_off_keeps_it_off(seen):
    gc.disable()
    try:
        check(fn, t(3), graphs=2, breaks=1, backend=_recording_backend(seen))
        assert seen == [("backend", False), ("guards", False), ("backend", False), ("guards", False)]
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_on_again_when_the_conversion_raises():
    def failing(gm, example_inputs):
        raise RuntimeError("backend failed")

    compiled = bytegraph.compile(lambda x: x.sin(), backend=failing)  # (the conversion's failure is the point)
    with pytest.raises(BackendCompilerFailed):
        compiled(t(3))
    assert gc.isenabled()
