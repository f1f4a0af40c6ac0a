"""Values computed from an object of the trace that depend on its address,
known only once the object exists (object's default ``repr``, its identity
``hash``, its ``id``): :class:`RuntimeValueVariable`, made after the graph;
and :func:`held_by_frames`, which tells when such an object is still alive."""
from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

from bytegraph.variables.base import VariableTracker
from bytegraph.variables.constant import ConstantVariable

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker


def held_by_frames(tx: Tx, vt: VT) -> bool:
    """Whether ``vt`` is a local or on the stack of this user frame or a caller's, or
    an item of a sequence that is: then its object is alive (a conservative
    answer: False may be wrong, True is not)."""
    return any(held is vt or isinstance(getattr(held, "items", None), list) and any(i is vt for i in held.items)
               for frame in tx.user_frames() for held in (*frame.symbolic_locals.values(), *frame.stack))


class RuntimeValueVariable(VariableTracker):
    """``fn(obj)`` (of type ``cls``) for an object made in the trace, where the
    answer depends on the object's address, known only once it exists: object's
    default ``str``/``repr`` (``<module.Class object at 0x...>``), its identity
    ``hash``, its ``id``. Made after the graph by ``fn`` of the rebuilt object;
    the trace cannot read it (reading it is a graph break), except that two
    ``id()`` of objects compare as the objects' identities do."""

    def __init__(self, obj: VT, fn: Any, cls: type):
        super().__init__()
        self.obj = obj
        self.fn = fn
        self.cls = cls

    def python_type(self) -> type:
        return self.cls

    def hash_value(self, tx: Tx) -> VT | None:
        """``hash()`` of the value: a function of it alone, made after the graph too."""
        return RuntimeValueVariable(self, hash, int)

    def binary_op(self, tx: Tx, op: Any, other: VT) -> Any:
        """``id(a) == id(b)`` (and ``!=``): ``a is b``, when the trace knows it and,
        for distinct objects, both are still alive (held by a frame's locals or
        stack): a dead object's address may be reused by a later one."""
        if op in (operator.eq, operator.ne) and self.fn is id and isinstance(other, RuntimeValueVariable) and (
                other.fn is id):
            same = self.obj.same_object(tx, other.obj)
            if same or same is False and held_by_frames(tx, self.obj) and held_by_frames(tx, other.obj):
                return ConstantVariable(same if op is operator.eq else not same)
        return NotImplemented

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.load_callable(self.fn)
        codegen.reconstruct(self.obj)
        codegen.call(1)

    def __repr__(self) -> str:
        return f"RuntimeValueVariable({self.fn.__name__}, {self.obj})"
