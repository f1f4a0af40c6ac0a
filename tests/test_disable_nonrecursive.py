"""``torch.compiler.disable(fn, recursive=False)``: ``fn``'s own frame runs
natively and the functions it calls are compiled as frames of their own, as
torch.compile's frame hook does, however the callee is reached."""
import functools

import pytest
import torch

from tests.helpers import check

#: the break at the call of a function disabled with recursive=False (its callees compile on their own)
NOT_ITS_CALLEES = ["function disabled for compilers, not its callees"]


def callee(x, k=2):
    return x.cos() * k


class Scaler:
    def scale(self, x):
        return x.tanh() + 1


class Block(torch.nn.Module):
    def forward(self, x):
        return x.exp() - 1


class Base:
    def step(self, x):
        return x.sigmoid() * 3


class Child(Base):
    @torch.compiler.disable(recursive=False)
    def step(self, x):
        return super().step(x + 1) + x


def _global(y):
    return callee(y) + y


def _method(y):
    return Scaler().scale(y) + y


def _local(y):
    fn = callee
    return fn(y) + y


def _from_a_list(y, fns=(callee,)):
    return fns[0](y) + y


def _module(y, block=Block()):
    return block(y) + y


def _keywords(y):
    return callee(y, k=3) + y


def _star_args(y):
    args = (y, 4)
    return callee(*args) + y


def _partial(y):
    return functools.partial(callee, k=5)(y) + y


def _closure():
    inner = callee

    def helper(y):
        return inner(y) + y

    return helper


HELPERS = {"global": _global, "method": _method, "local": _local, "from_a_list": _from_a_list, "module": _module,
           "keywords": _keywords, "star_args": _star_args, "partial": _partial, "closure": _closure()}


@pytest.mark.parametrize("kind", sorted(HELPERS))
def test_the_callees_of_a_function_disabled_without_recursion_are_compiled(kind):
    helper = torch.compiler.disable(HELPERS[kind], recursive=False)
    # graphs: the caller's x.sin() and the callee's body; the helper's own `+ y` runs natively
    check(lambda x: helper(x.sin()), torch.randn(4), graphs=2, breaks=1, gb_types=NOT_ITS_CALLEES)


def test_a_disabled_method_reaches_its_base_through_super():
    child = Child()
    check(lambda x: child.step(x.sin()), torch.randn(4), graphs=2, breaks=1, gb_types=NOT_ITS_CALLEES)


def test_with_recursion_its_callees_run_natively_too():
    helper = torch.compiler.disable(_global)  # recursive=True
    check(lambda x: helper(x.sin()), torch.randn(4), graphs=1, breaks=1, gb_types=["function disabled for compilers"])


def test_torch_functions_it_calls_run_natively():
    helper = torch.compiler.disable(lambda y: torch.nn.functional.gelu(y) + y, recursive=False)
    check(lambda x: helper(x.sin()), torch.randn(4), graphs=1, breaks=1, gb_types=NOT_ITS_CALLEES)


def test_later_calls_reuse_the_compiled_callees():
    helper = torch.compiler.disable(_global, recursive=False)
    check(lambda x: helper(x.sin()), calls=[(torch.randn(4),) for _ in range(3)], graphs=2, breaks=1,
          gb_types=NOT_ITS_CALLEES)


def test_an_exception_from_a_callee_surfaces_as_eager_raises_it():
    def failing(y):
        raise KeyError("no such thing")

    helper = torch.compiler.disable(lambda y: failing(y) + y, recursive=False)
    check(lambda x: helper(x.sin()), torch.randn(4), raises=KeyError, graphs=1, breaks=2,
          gb_types=[*NOT_ITS_CALLEES, "uncaught exception"])
