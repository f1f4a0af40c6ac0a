"""Functions with ``assert`` statements on tensor data, for
tests/test_data_dependent.py: they live outside the test module because pytest
rewrites the asserts of test modules into plain branches."""

LOG: list = []


def assert_all_positive(x):
    LOG.append("before")
    assert (x > 0).all(), f"not positive: {x.shape}"
    return x.log()


def assert_not_any_negative(x):
    assert not (x < 0).any()
    return x.sqrt()


def assert_on_captured_scalar(x):
    assert x.sum().item() > 0, "sum"
    return x * 2


def assert_then_sum(x):
    y = x * 3
    assert y.sum() > 0
    return y.sin().sum()


def assert_several_elements(x):
    assert x > 0
    return x
