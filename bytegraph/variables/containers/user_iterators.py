"""Iterators over user objects, stepped as the consumer asks for items: an
object with a Python ``__next__`` (:class:`PythonIteratorVariable`), and
CPython's sequence iterator over an object with ``__getitem__`` and no
``__iter__`` (:class:`SequenceIteratorVariable`)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bytegraph.breaks import unimplemented
from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable
from bytegraph.variables.containers.iterators import IteratorVariable, iterator_at
from bytegraph.variables.exceptions import ExceptionVariable, TracedException

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx


class PythonIteratorVariable(IteratorVariable):
    """A user object whose class defines ``__next__`` in Python, iterated: each
    step calls its ``__next__`` (traced, ``next_method`` bound to it) when the
    consumer asks for an item, so the loop body and ``__next__`` interleave as
    in eager; StopIteration ends it."""

    def __init__(self, obj: VariableTracker, next_method: VariableTracker):
        super().__init__()
        self.obj = obj
        self.next_method = next_method

    def python_type(self) -> type:
        return self.obj.python_type()

    def next_item(self, tx: Tx) -> VariableTracker | None:
        try:
            return self.next_method.call_function(tx, [], {})
        except TracedException as e:
            if isinstance(e.exc, ExceptionVariable) and issubclass(e.exc.exc_type, StopIteration):
                return None
            raise

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.reconstruct(self.obj)


class _Indexable:
    def __getitem__(self, index: int) -> Any:
        raise IndexError(index)


class SequenceIteratorVariable(IteratorVariable):
    """``iter(obj)`` of a user object whose class has ``__getitem__`` and no
    ``__iter__`` (CPython's sequence iterator, ``Objects/iterobject.c``): step
    ``n`` asks ``obj[n]`` (traced) when the consumer asks for an item;
    IndexError or StopIteration ends it, for good."""

    def __init__(self, obj: VariableTracker):
        super().__init__()
        self.obj = obj
        self.index = 0
        self.exhausted = False

    def python_type(self) -> type:
        return type(iter(_Indexable()))

    def next_item(self, tx: Tx) -> VariableTracker | None:
        if self.exhausted:
            return None
        try:
            item = self.obj.call_method(tx, "__getitem__", [ConstantVariable(self.index)], {})
        except TracedException as e:
            if isinstance(e.exc, ExceptionVariable) and issubclass(e.exc.exc_type, (IndexError, StopIteration)):
                self.exhausted = True
                return None
            raise
        self.index += 1
        return item

    def reconstruct(self, codegen: PyCodegen) -> None:
        if self.exhausted:  # rebuilding an exhausted one would ask obj[n] again
            unimplemented(
                gb_type="exhausted sequence iterator",
                context=f"iterator over {self.obj} after its end",
                explanation="An exhausted iterator over an object's __getitem__ cannot be rebuilt without calling it.",
                hints=("Do not keep the iterator past the end of the loop.",),
            )
        codegen.load_callable(iterator_at)
        codegen.reconstruct(self.obj)
        codegen.load_const(self.index)
        codegen.call(2)
