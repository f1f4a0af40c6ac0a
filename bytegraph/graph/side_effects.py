"""Side effects: mutations of Python objects that existed before the call.

During the trace, mutations update the VariableTrackers (so later reads see
them) and are recorded here. After the graph runs, the generated code replays
them on the real objects, in two phases so that no replayed value is read after
something it depends on was overwritten:

1. every new value (and the frame's live values) is built into temporaries;
2. the mutations are applied in the order they first happened, then the
   recorded actions (calls such as ``t.register_hook(fn)``) are performed.

The tracker also keeps one VT per mutable real object (identity): reading the
same list through two paths yields the same VT.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from bytegraph.breaks import unimplemented

if TYPE_CHECKING:
    from bytegraph.graph.codegen import PyCodegen


DELETED = object()  # marks an attribute deleted by the trace


class SideEffects:
    """Mutations recorded by one trace.

    Attributes are private; use :meth:`mutate`, :meth:`store_attr`,
    :meth:`store_global` during the trace and :meth:`codegen_*` afterwards.
    """

    def __init__(self) -> None:
        self._objects: dict[int, tuple[Any, Any]] = {}  # id(real) -> (real, VT)
        self._mutated: dict[int, Any] = {}  # id(VT) -> VT whose contents changed
        self._attrs: dict[tuple[int, str], tuple[Any, str, Any]] = {}  # (id(VT), name) -> (VT, name, value VT)
        self._globals: dict[tuple[int, str], tuple[dict, str, Any]] = {}
        self._raw: set[tuple[int, str]] = set()
        self._calls: list[tuple[Any, tuple, dict]] = []
        self._first_calls: list[tuple[Any, tuple, dict]] = []
        self._actions: list[Any] = []  # VTs whose ``replay(codegen)`` performs a call
        #: bumped by every recorded effect: equal before and after a traced call when it made none
        self.version = 0

    # ---- identity of real objects --------------------------------------------------
    def tracked(self, value: Any) -> Any:
        """The VT already standing for ``value``, or None."""
        entry = self._objects.get(id(value))
        return entry[1] if entry is not None and entry[0] is value else None

    def track(self, value: Any, vt: Any) -> Any:
        """Remember ``vt`` as the one VT of ``value``; returns ``vt``."""
        self._objects[id(value)] = (value, vt)
        return vt

    def object_of(self, vt: Any) -> Any:
        """The real object behind ``vt``, if it is a tracked input (else None)."""
        for real, tracked_vt in self._objects.values():
            if tracked_vt is vt:
                return real
        return None

    def aliasing_sources(self) -> list[Any]:
        """Sources of the pre-existing mutable Python objects the trace used
        (lists, dicts, sets, user objects, modules; not tensors), when it
        mutated one of them: these must stay distinct objects on later calls,
        or a mutation through one would be missed by reads through another.
        Modules (guarded by type, not identity) count only when the trace
        stored an attribute of one."""
        if not (self._mutated or self._attrs):
            return []
        module_stores = any(isinstance(self.object_of(vt), torch.nn.Module) for vt, _, _ in self._attrs.values())
        return [vt.source for value, vt in self._objects.values()
                if vt.source is not None and not isinstance(value, torch.Tensor) and (
                    isinstance(value, torch.nn.Module) and module_stores
                    or not isinstance(value, torch.nn.Module) and getattr(vt, "mutable", False))]

    def identity_of(self, vt: Any) -> int | None:
        """``id()`` of the real object behind ``vt``, if it is a tracked input."""
        real = self.object_of(vt)
        return None if real is None else id(real)

    # ---- recording -------------------------------------------------------------------
    def mutate(self, vt: Any) -> None:
        """``vt`` (a list/dict/set VT) is about to change in place."""
        if vt.source is not None:
            self._mutated[id(vt)] = vt
            self.version += 1

    def store_attr(self, obj: Any, name: str, value: Any, raw: bool = False) -> None:
        """``obj.name = value`` on a pre-existing object. ``raw``: the store came
        from ``object.__setattr__`` inside an inlined ``__setattr__`` override, so
        the replay must bypass the override too."""
        if obj.source is None:
            unimplemented(
                gb_type="attribute store on new object",
                context=f"setting {name!r} on {obj}",
                explanation="Objects created inside the trace cannot have attributes stored yet.",
                hints=("Create the object outside the compiled function.",),
            )
        self._attrs[(id(obj), name)] = (obj, name, value)
        self.version += 1
        if raw:
            self._raw.add((id(obj), name))
        else:
            self._raw.discard((id(obj), name))

    def delete_attr(self, obj: Any, name: str, existed: bool) -> None:
        """``del obj.name``; ``existed``: whether the real object had it before the call."""
        if existed:
            self.store_attr(obj, name, DELETED)
        else:
            self._attrs.pop((id(obj), name), None)
            self.version += 1

    def pending_attr(self, obj: Any, name: str) -> Any:
        """The value stored to ``obj.name`` earlier in the trace, :data:`DELETED`
        after a ``del``, or None when the trace did not touch it."""
        entry = self._attrs.get((id(obj), name))
        return entry[2] if entry is not None else None

    def pending_attr_names(self, obj: Any) -> list[str]:
        """Names of ``obj``'s attributes stored or deleted earlier in the trace."""
        return [name for (ident, name) in self._attrs if ident == id(obj)]

    def store_global(self, f_globals: dict, name: str, value: Any) -> None:
        self._globals[(id(f_globals), name)] = (f_globals, name, value)
        self.version += 1

    def pending_global(self, f_globals: dict, name: str) -> Any:
        entry = self._globals.get((id(f_globals), name))
        return entry[2] if entry is not None else None

    def record_call(self, fn: Any, args: tuple, kwargs: dict, first: bool = False) -> None:
        """A call with constant arguments whose only effect is outside the
        program's values (a warning, a log line, a cache's statistics): made
        after the graph runs, after the other side effects, or before them when
        ``first`` (a call that must see the objects as they were before them)."""
        (self._first_calls if first else self._calls).append((fn, args, kwargs))
        self.version += 1

    def record_action(self, vt: Any) -> None:
        """A call on pre-existing objects that must happen after the graph (e.g.
        registering a hook on an input tensor): ``vt.replay(codegen)`` emits it."""
        self._actions.append(vt)
        self.version += 1

    def calls_made(self) -> int:
        """How many calls are recorded to be made after the graph (see :meth:`drop_calls`)."""
        return len(self._calls)

    def drop_calls(self, made: int) -> None:
        """Forget the calls recorded after the first ``made`` (a call made for real
        after the graph makes them itself)."""
        del self._calls[made:]

    def changed_objects(self) -> bool:
        """Whether the trace changed an object so far (contents, attributes,
        globals, a recorded action), calls made after the graph aside."""
        return bool(self._mutated or self._attrs or self._globals or self._actions)

    def is_empty(self) -> bool:
        return not (self._mutated or self._attrs or self._globals or self._calls or self._first_calls
                    or self._actions)

    # ---- replay ------------------------------------------------------------------------
    def codegen_values(self, codegen: PyCodegen) -> list[tuple[str, Any, str]]:
        """Phase 1: build every new value into a temporary.

        Returns the plan for :meth:`codegen_apply`: ``(kind, target, temp)``.
        """
        plan = [("call", call, "") for call in self._first_calls]
        for vt in self._mutated.values():
            plan.append(("contents", vt, codegen.store_temp(lambda v=vt: v.reconstruct_contents(codegen))))
        for obj, name, value in self._attrs.values():
            if value is DELETED:
                plan.append(("delattr", (obj, name), ""))
            else:
                kind = "rawattr" if (id(obj), name) in self._raw else "attr"
                plan.append((kind, (obj, name), codegen.store_temp(lambda v=value: codegen.reconstruct(v))))
        for f_globals, name, value in self._globals.values():
            plan.append(("global", (f_globals, name), codegen.store_temp(lambda v=value: codegen.reconstruct(v))))
        plan += [("call", call, "") for call in self._calls]
        plan += [("action", vt, "") for vt in self._actions]
        # an input iterator's write-back comes last: running it to its end drops its sequence, which
        # other targets' sources may reach through it (``iterator_state(it)[0]``)
        return sorted(plan, key=lambda step: step[0] == "contents" and getattr(step[1], "write_back_last", False))

    @staticmethod
    def codegen_apply(codegen: PyCodegen, plan: list[tuple[str, Any, str]]) -> None:
        """Phase 2: write the temporaries into the real objects."""
        for kind, target, temp in plan:
            if kind == "contents":
                target.apply_contents(codegen, temp)
            elif kind == "attr":
                obj, name = target
                codegen.load_local(temp)
                codegen.load_source(obj.source)
                codegen.emit("STORE_ATTR", name)
            elif kind == "rawattr":
                obj, name = target
                codegen.load_callable(object.__setattr__)
                codegen.load_source(obj.source)
                codegen.load_const(name)
                codegen.load_local(temp)
                codegen.call(3)
                codegen.emit("POP_TOP")
            elif kind == "call":
                fn, args, kwargs = target
                codegen.load_callable(fn)
                for arg in (*args, *kwargs.values()):
                    codegen.load_const(arg)
                if kwargs:
                    codegen.emit("KW_NAMES", tuple(kwargs))
                codegen.call(len(args) + len(kwargs))
                codegen.emit("POP_TOP")
            elif kind == "action":
                target.replay(codegen)
            elif kind == "delattr":  # recorded deletes are object.__delattr__'s (overrides were inlined)
                obj, name = target
                codegen.load_callable(object.__delattr__)
                codegen.load_source(obj.source)
                codegen.load_const(name)
                codegen.call(2)
                codegen.emit("POP_TOP")
            else:
                f_globals, name = target
                codegen.load_local(temp)
                codegen.store_global(name, f_globals)
