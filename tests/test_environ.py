"""``os.environ`` reads in compiled code: ``get`` (with and without a default),
``[key]`` (a missing key raises eager's KeyError) and ``in`` are folded and
guarded on the variable's value, so changing it recompiles; other uses are a
graph break."""
import os

import pytest

from helpers import check, check_scenario, t

PRESENT, ABSENT = "BYTEGRAPH_TEST_PRESENT", "BYTEGRAPH_TEST_ABSENT"


@pytest.fixture(autouse=True)
def _environment(monkeypatch):
    monkeypatch.setenv(PRESENT, "3")
    monkeypatch.delenv(ABSENT, raising=False)


@pytest.mark.parametrize("key", [PRESENT, ABSENT])
def test_reads(key):
    def f(x):
        return x + 1, os.environ.get(key), os.environ.get(key, "d"), key in os.environ

    check(f, t(2))


def test_item_present_and_missing():
    def f(x, key):
        try:
            return x + int(os.environ[key])
        except KeyError as e:
            return x - 1, e.args

    check(f, calls=[(t(2), PRESENT), (t(2), ABSENT)], graphs=2)


def test_changing_the_variable_recompiles():
    def run(compile):
        os.environ[PRESENT] = "3"
        fn = compile(lambda x: x + int(os.environ.get(PRESENT, "0")))
        first = fn(t(2))
        os.environ[PRESENT] = "5"
        return first, fn(t(2))

    check_scenario(run, graphs=2)


def test_other_uses_break():
    def f(x):
        return x + 1, len(os.environ.copy()) > 0

    check(f, t(2), breaks=1, gb_types=["unsupported environment access"])
