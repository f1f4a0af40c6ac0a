"""Values only the translator holds: the NULL pushed next to a callable, the
``__exit__`` that ``BEFORE_WITH`` leaves, the results of instructions run
natively at a graph break, and the scalar arguments the frame has not read."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from bytegraph.variables.base import VariableTracker

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen
    from bytegraph.variables.tx import Tx

VT = VariableTracker


class NullVariable(VariableTracker):
    """The NULL that ``PUSH_NULL``/``LOAD_GLOBAL`` put next to a callable for a call
    (below it up to 3.12, above it from 3.13), or an unbound local saved by
    ``LOAD_FAST_AND_CLEAR``."""

    def python_type(self) -> type:
        return type(None)

    def reconstruct(self, codegen: PyCodegen) -> None:
        codegen.emit("PUSH_NULL")

    def __repr__(self) -> str:
        return "NULL"


class UnreadArgument(VariableTracker):
    """A scalar argument of the compiled frame (an exact ``int``, ``float``,
    ``bool``, ``complex``, ``str``, ``bytes`` or None: immutable) that its code
    has not read yet. It is wrapped, and guarded, when the code first reads it
    (:meth:`~bytegraph.variables.tx.Tx.read_local`), so an argument the frame
    never reads guards nothing, as with torch.compile: a training step's unused
    ``batch_idx`` does not recompile it at the next batch. Until then it is
    rebuilt from its source (a graph break hands it on as it came)."""

    KINDS = (int, float, bool, complex, str, bytes, type(None))

    def __init__(self, value: object, source: object):
        super().__init__(source)
        self.value = value

    def python_type(self) -> type:
        return type(self.value)

    def __repr__(self) -> str:
        return f"UnreadArgument({type(self.value).__name__})"


class ClassNamespaceVariable(VariableTracker):
    """The namespace ``LOAD_LOCALS`` pushes in a class body (3.12+), for the
    ``LOAD_FROM_DICT_OR_DEREF``/``LOAD_FROM_DICT_OR_GLOBALS`` that reads it next."""

    def __init__(self, namespace: dict[str, VT]):
        super().__init__()
        self.namespace = namespace

    def python_type(self) -> type:
        return dict

    def __repr__(self) -> str:
        return "ClassNamespaceVariable()"


class WithExitVariable(VariableTracker):
    """The ``__exit__`` that ``BEFORE_WITH`` leaves on the stack."""

    def __init__(self, ctx: VT):
        super().__init__()
        self.ctx = ctx

    def call_function(self, tx: Tx, args: Sequence[VT], kwargs: dict[str, VT]) -> VT:
        tx.block_stack.remove(self.ctx)
        return self.ctx.exit(tx, list(args))

    def reconstruct(self, codegen: PyCodegen) -> None:
        """Leave the context's ``__exit__``: the generated code resumes inside
        the ``with`` block. A torch state context (grad mode) is re-created and
        entered again (its effect lives in global state, which the graph
        boundary resets), starting from the grad mode the original found;
        a user context is rebuilt as it is, already entered."""
        reenter = getattr(self.ctx, "reenter_on_reconstruct", False)
        if reenter and self.ctx.grad_mode_to_reenter() is not None:
            # re-made and entered under the mode eager's object found, which its __exit__ restores
            codegen.set_grad_enabled(self.ctx.grad_mode_to_reenter())
        codegen.reconstruct(self.ctx)
        if reenter:
            codegen.emit("COPY", 1)
            codegen.emit("LOAD_METHOD", "__enter__")
            codegen.call(0)
            codegen.emit("POP_TOP")
        codegen.load_attr("__exit__")


class NativeResultVariable(VariableTracker):
    """What an instruction run natively at a graph break pushes, while the
    translator looks ahead for the end of the untraceable stretch
    (``translator/native_stretch.py``): a value known only at run time, which
    no operation can read."""

    def __repr__(self) -> str:
        return "NativeResultVariable()"
