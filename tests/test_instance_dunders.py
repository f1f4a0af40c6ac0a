"""``value.__class__`` and plain class attributes (``__doc__``, ``__hash__ = None``)
of builtin containers, views, iterators and constants: ``__class__`` is
``type(value)`` (it was a bound method of the value, so ``[].__class__ is list``
was False); ``__doc__`` is the class's own string; what only the metaclass
defines (``__name__``, ``__base__``, ``mro``) is not an attribute of instances."""
import collections

import pytest
import torch

from helpers import check, t

MADE = {
    "list": lambda: [1, 2], "tuple": lambda: (1, 2), "dict": lambda: {1: 2}, "set": lambda: {1},
    "frozenset": lambda: frozenset([1]), "keys": lambda: {1: 2}.keys(), "values": lambda: {1: 2}.values(),
    "items": lambda: {1: 2}.items(), "list_iterator": lambda: iter([1]), "range": lambda: range(3),
    "slice": lambda: slice(1, 2), "ordered_dict": lambda: collections.OrderedDict(a=1),
    "defaultdict": lambda: collections.defaultdict(int), "deque": lambda: collections.deque([1]),
    "int": lambda: 1, "str": lambda: "s", "none": lambda: None, "float": lambda: 1.5, "bool": lambda: True,
    "bytes": lambda: b"x", "zip": lambda: zip([1], [2]), "enumerate": lambda: enumerate([1]),
    "map": lambda: map(abs, [1]), "size": lambda: torch.Size([2, 3]), "bound_method": lambda: [].append,
    "function": lambda: (lambda: 1), "tensor": lambda: torch.ones(2),
}
#: kinds whose instances may hold their own ``__doc__`` (an instance ``__dict__``): a graph break
DOC_BREAKS = {"ordered_dict": "unsupported attribute", "tensor": "unsupported tensor attribute"}
INPUTS = {
    "list": [1, 2], "tuple": (1, 2), "dict": {1: 2}, "set": {1}, "ordered_dict": collections.OrderedDict(a=1),
    "defaultdict": collections.defaultdict(int), "deque": collections.deque([1]), "size": torch.Size([2]),
    "int": 3, "str": "s", "range": range(2), "none": None,
}


@pytest.mark.parametrize("kind", MADE)
def test_class_of_value_made_in_trace(kind):
    make = MADE[kind]

    def f(x):
        v = make()
        c = v.__class__
        return x + 1, c is type(v), c.__name__

    check(f, t(2))


@pytest.mark.parametrize("kind", INPUTS)
def test_class_of_input(kind):
    def f(x, v):
        c = v.__class__
        return x + 1, c is type(v), c.__qualname__

    check(f, t(2), INPUTS[kind])


@pytest.mark.parametrize("kind", MADE)
def test_doc_of_value_made_in_trace(kind):
    make = MADE[kind]

    def f(x):
        v = make()
        return x + 1, v.__doc__ is type(v).__doc__

    gb_type = DOC_BREAKS.get(kind)
    check(f, t(2), breaks=0 if gb_type is None else 1, gb_types=None if gb_type is None else [gb_type])


def test_hash_none_of_list():
    def f(x):
        return x + 1, [].__hash__ is None, {}.__hash__

    check(f, t(2))


@pytest.mark.parametrize("name", ["__name__", "__base__", "__subclasses__", "mro", "__call__"])
def test_metaclass_attribute_is_not_an_instance_attribute(name):
    """(Not a bound method of the list: a graph break, the AttributeError raised natively.)"""
    def f(x):
        try:
            getattr([1], name)
        except AttributeError as e:
            return x + 1, str(e)
        return x - 1, ""

    check(f, t(2), graphs=0, breaks=1, gb_types=["unsupported attribute"])


class Plain:
    pass


class Disguised:
    """Claims another class, as ``unittest.mock`` specs do."""

    @property
    def __class__(self):
        return Plain


class DisguisedTensor(torch.Tensor):
    @property
    def __class__(self):
        return Plain


@pytest.mark.parametrize("make", [Plain, Disguised, lambda: torch.nn.Linear(2, 2),
                                  lambda: torch.ones(2).as_subclass(DisguisedTensor)],
                         ids=["object", "overriding_object", "module", "overriding_tensor_subclass"])
def test_class_of_user_values(make):
    """``__class__`` is ``type(value)`` unless the class overrides it (then its property answers)."""
    def f(x, v):
        return x + 1, v.__class__ is type(v), v.__class__.__name__, isinstance(v, Plain)

    check(f, make=lambda: (t(2), make()))
