"""Contract tests per VariableTracker kind, against a stub ``Tx`` (the protocol
of ``bytegraph/variables/tx.py`` with a real OutputGraph): what each kind
answers for an attribute it knows and one it does not, a method it knows and
one it does not, and a binary operator it supports and one it does not
(CPython's order: the left operand's rule, NotImplemented, the right
operand's reflected rule, NotImplemented, TypeError).

Known answers are compared with what eager computes on the same value;
unknown ones must be eager's error (raised in the trace) or a graph break
(the native run raises it), never a value.
"""
import operator

import pytest
import torch

import bytegraph  # noqa: F401  (provides the builder's functions to the variables layer)
from bytegraph.breaks import Unsupported
from bytegraph.graph.output_graph import OutputGraph
from bytegraph.guards.source import LocalSource
from bytegraph.variables.builder import wrap, wrap_const
from bytegraph.variables.exceptions import TracedException
from bytegraph.variables.operators import call_operator


class StubTx:
    """The least a VT needs of a translator (:class:`bytegraph.variables.tx.Tx`)."""

    def __init__(self):
        self.output = OutputGraph(1000)
        self.code = (lambda: None).__code__
        self.f_globals = {}
        self.symbolic_locals = {}
        self.block_stack = []

    def root(self):
        return self

    def user_frames(self):
        return [self]


class Opaque:
    """A user class whose instances support no operator."""


# (value, known attribute, known method and its arguments, supported operator and operand, unsupported one);
# None: the kind has none a stub Tx can answer (a user object's methods are inlined: a real translator)
KINDS = {
    "int": (lambda: 3, "real", ("bit_length", ()), (operator.add, 4), (operator.add, "x")),
    "str": (lambda: "ab", "__doc__", ("upper", ()), (operator.add, "c"), (operator.sub, "c")),
    "list": (lambda: [1, 2], None, ("index", (2,)), (operator.add, [3]), (operator.add, (3,))),
    "tuple": (lambda: (1, 2), None, ("count", (1,)), (operator.mul, 2), (operator.sub, (1,))),
    "dict": (lambda: {"a": 1}, None, ("get", ("a",)), (operator.or_, {"b": 2}), (operator.add, {"b": 2})),
    "set": (lambda: {1, 2}, None, ("issubset", ({1, 2, 3},)), (operator.or_, {3}), (operator.add, {3})),
    "tensor": (lambda: torch.ones(2), "shape", ("dim", ()), (operator.mul, 2), (operator.matmul, "x")),
    "object": (Opaque, None, None, None, (operator.add, 1)),
}


def _constant(vt):
    return vt.as_python_constant()


def _eager_error(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (the contract compares the type)
        return type(e)
    raise AssertionError("eager raised nothing")


def _raises_like_eager(fn, eager_type):
    """``fn`` (a VT operation) raises eager's error in the trace, or breaks the graph."""
    try:
        result = fn()
    except TracedException as e:
        assert issubclass(e.exc.exc_type, eager_type), (e.exc.exc_type, eager_type)
    except Unsupported:
        pass
    else:
        raise AssertionError(f"answered {result} where eager raises {eager_type.__name__}")


@pytest.fixture
def tx():
    return StubTx()


def _wrapped(tx, name):
    value = KINDS[name][0]()
    return value, wrap(tx, value, LocalSource(f"arg_{name}"))


@pytest.mark.parametrize("name", KINDS)
def test_attribute(tx, name):
    value, vt = _wrapped(tx, name)
    known = KINDS[name][1]
    if known is not None:
        assert _constant(vt.var_getattr(tx, known)) == getattr(value, known)
    _raises_like_eager(lambda: vt.var_getattr(tx, "no_such_attribute"),
                       _eager_error(lambda: value.no_such_attribute))


@pytest.mark.parametrize("name", KINDS)
def test_method(tx, name):
    value, vt = _wrapped(tx, name)
    if KINDS[name][2] is not None:
        method, args = KINDS[name][2]
        result = vt.call_method(tx, method, [wrap_const(tx, a) for a in args], {})
        expected = getattr(value, method)(*args)
        if isinstance(expected, torch.Tensor):
            assert result.example.shape == expected.shape
        else:
            assert _constant(result) == expected
    _raises_like_eager(lambda: vt.call_method(tx, "no_such_method", [], {}),
                       _eager_error(lambda: value.no_such_method()))


@pytest.mark.parametrize("name", KINDS)
def test_binary_operator(tx, name):
    value, vt = _wrapped(tx, name)
    supported, unsupported = KINDS[name][3], KINDS[name][4]
    if supported is not None:
        op, other = supported
        result = call_operator(tx, op, [vt, wrap_const(tx, other)])
        expected = op(value, other)
        if isinstance(expected, torch.Tensor):
            assert result.example.shape == expected.shape and result.example.dtype == expected.dtype
        else:
            assert _constant(result) == expected
    op, other = unsupported
    other_vt = wrap_const(tx, other)
    if name == "tensor":  # a tensor's rule asks its FakeTensor, which raises: a graph break, not NotImplemented
        with pytest.raises(Unsupported):
            vt.binary_op(tx, op, other_vt)
    else:
        assert vt.binary_op(tx, op, other_vt) is NotImplemented
        assert other_vt.reflected_binary_op(tx, op, vt) is NotImplemented
    _raises_like_eager(lambda: call_operator(tx, op, [vt, other_vt]), _eager_error(lambda: op(value, other)))
