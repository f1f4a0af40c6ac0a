"""Functions with ``assert`` statements, for tests/test_data_dependent.py and
tests/test_fallback.py: they live outside the test modules because pytest
rewrites the asserts of test modules into plain branches (whose messages hold
the reprs, and addresses, of the values)."""
import torch

LOG: list = []


def assert_is_a_matrix(x):
    assert x.dim() == 2, "need a matrix"
    return x


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


def assert_after_augmented_assignment(x):
    x += 1  # operator.iadd in the graph: an in-place write the rerun must not repeat
    assert (x > 0).all(), "not positive"
    return x * 2


class NormThenAssert:
    """The forward of a module that updates batch-norm running statistics (a
    write no version counter shows) and then asserts on its input."""

    @staticmethod
    def forward(module, x):
        y = module.norm(x)
        assert x.sum() > 0, "negative input"
        return y


def write_then_assert_negative(x):
    x.add_(1)
    assert x.sum() < 0, "not negative"
    return x


def assert_item_truthy(x):
    assert x.sum().item(), "zero"
    return x + 1


def assert_item_not_nan(x):
    value = x.sum().item()
    assert value == value, "nan"  # False only for NaN, which real-number reasoning cannot see
    return x + 1


def assert_inside_autocast(x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ x
        assert y.sum() > 0, "not positive"
    return y
