"""Decompile the code objects bytegraph generates back to Python source.

A transformed frame and a compiled resume function have few shapes: straight
line code that reads inputs, calls the compiled graph, rebuilds locals and
returns or calls a resume function; at a graph break, a forward jump into a
copy of the original body for the instruction that runs natively, then a jump
to the epilogue; at a data-dependent branch, two such paths. This module
replays the value stack symbolically over those shapes (forward jumps only,
each conditional jump splitting into ``if``/``else``), one statement per
store, call result or return.

Where a path meets what these shapes never contain (a loop, a ``with`` or
``try`` block, generators...), which happens when the rest of a frame runs
natively from the copied body, the decompiled code says so and stops: that
part is the user's own source, shown beside it in the report. Anywhere else
it says which instruction it did not decompile.

Objects the code loads as constants (compiled graphs, resume functions,
functions, classes) appear as names (``__compiled_graph_0``,
``__resume_in_f_at_12``); :attr:`Decompiled.names` maps each name to its
object, so ``exec`` of the source in a namespace holding them and the frame's
globals defines a function that runs like the code object. Literal constants
appear as literals. (depyf, the decompiler torch.compile users know, imports
TorchDynamo at import time, which bytegraph never does; and it shows these
objects as strings.)
"""
from __future__ import annotations

import dataclasses
import dis
import inspect
import math
import re
import types
from typing import Any

from bytegraph.bytecode.instructions import Instruction, decode

_NULL = object()  # what PUSH_NULL and LOAD_GLOBAL push next to a callable
_NAME = re.compile(r"[A-Za-z_][\w.]*")
_SKIP = frozenset({"NOP", "RESUME", "PRECALL", "MAKE_CELL", "COPY_FREE_VARS", "CACHE", "EXTENDED_ARG"})
_LOADS = frozenset({"LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_NAME", "LOAD_CLASSDEREF"})
_STORES = frozenset({"STORE_FAST", "STORE_DEREF", "STORE_NAME", "STORE_GLOBAL"})
_DELETES = frozenset({"DELETE_FAST", "DELETE_DEREF", "DELETE_NAME", "DELETE_GLOBAL"})
_UNARY = {"UNARY_NOT": "not ", "UNARY_NEGATIVE": "-", "UNARY_INVERT": "~", "UNARY_POSITIVE": "+"}
_BRANCHES = {  # opname -> the condition under which the jump is taken, over the popped value
    "POP_JUMP_FORWARD_IF_FALSE": "not {}", "POP_JUMP_FORWARD_IF_TRUE": "{}",
    "POP_JUMP_FORWARD_IF_NONE": "{} is None", "POP_JUMP_FORWARD_IF_NOT_NONE": "{} is not None",
}
#: instructions one decompilation may visit (paths are duplicated at each branch)
MAX_STEPS = 5000


@dataclasses.dataclass
class Decompiled:
    """One code object, decompiled.

    Attributes:
        source: a ``def`` statement equivalent to the code object.
        names: name in ``source`` -> the constant object it stands for.
        listing: the ``dis`` listing of the code object, shown beside it.
        complete: False when some path stopped where the rest runs natively.
        native_lines: the lines of the original code where a path hands over
            to it (each graph break), in order.
    """

    source: str
    names: dict[str, Any]
    listing: str
    complete: bool
    native_lines: list[int] = dataclasses.field(default_factory=list)


class _Stop(Exception):
    """A path reached an instruction outside the shapes this module knows."""


class _Path:
    """One path through the code: its value stack and emitted lines."""

    def __init__(self, stack: list, indent: int):
        self.stack = stack
        self.indent = indent
        self.lines: list[str] = []
        self.kw_names: tuple[str, ...] = ()  # set by KW_NAMES for the next CALL
        self.native = False  # whether the path has entered the copied original body


class _Decompiler:
    def __init__(self, code: types.CodeType, labels: dict[int, str]):
        self.code = code
        # (uncached: generated code may hold unhashable constants, e.g. a dict of globals)
        self.instructions = decode.__wrapped__(code).instructions
        self.labels = labels
        self.names: dict[str, Any] = {}
        self._name_of: dict[int, str] = {}
        self.literals: set[str] = set()  # stack texts that are literals (safe to repeat)
        self.temps = 0
        self.steps = 0
        self.complete = True
        self.native_lines: list[int] = []

    # ---- constants ------------------------------------------------------------------
    def const(self, value: Any) -> str:
        if _literal(value):
            self.literals.add(repr(value))
            return repr(value)
        name = self._name_of.get(id(value))
        if name is None:
            base = self.labels.get(id(value)) or _const_label(value)
            name, n = base, 1
            while name in self.names:
                n += 1
                name = f"{base}_{n}"
            self._name_of[id(value)] = name
            self.names[name] = value
        return name

    def temp(self) -> str:
        self.temps += 1
        return f"__tmp{self.temps}"

    # ---- paths ----------------------------------------------------------------------
    def run(self, index: int, path: _Path) -> list[str]:
        """Decompile from instruction ``index`` until the path returns or stops."""
        try:
            while True:
                self.steps += 1
                if self.steps > MAX_STEPS:
                    raise _Stop()
                inst = self.instructions[index]
                index = self.step(inst, path)
                if index is None:
                    return path.lines
        except _Stop:
            self.complete = False
            self.flush(path)  # what the path evaluated so far
            inst = self.instructions[index]
            if path.native:  # inside the copied original body: the user's own code runs from here
                where = f"line {inst.lineno}" if inst.lineno else "here"
                self.emit(path, f"...  # from {where} on, the original code of {self.code.co_name} runs natively")
            else:
                self.emit(path, f"...  # not decompiled from {inst.opname} at offset {inst.offset}: see the dis listing")
            return path.lines

    def emit(self, path: _Path, line: str) -> None:
        path.lines.append("    " * path.indent + line)

    def flush(self, path: _Path, writes: str | None = None) -> None:
        """Evaluate pending expressions into temporaries, in stack order, so
        statements run in the bytecode's order and a value built once stays one
        object; also values read from ``writes``, which is about to change."""
        reads = re.compile(rf"(?<![\w.]){re.escape(writes)}(?!\w)") if writes else None
        for i, value in enumerate(path.stack):
            if value is _NULL or value in self.literals:
                continue
            if _NAME.fullmatch(value) and not (reads and reads.search(value)):
                continue
            temp = self.temp()
            self.emit(path, f"{temp} = {_bare(value)}")
            path.stack[i] = temp

    def statement(self, path: _Path, line: str, writes: str | None = None) -> None:
        self.flush(path, writes)
        self.emit(path, line)

    def step(self, inst: Instruction, path: _Path) -> int | None:  # noqa: C901 - one branch per opcode
        op, arg, val, stack = inst.opname, inst.arg, inst.argval, path.stack
        nxt = inst.index + 1
        if op in _SKIP:
            return nxt
        if op in _LOADS:
            stack.append(_ident(val))
        elif op == "LOAD_GLOBAL":
            if arg & 1:
                stack.append(_NULL)
            stack.append(_ident(val))
        elif op == "LOAD_CONST":
            stack.append(self.const(val))
        elif op == "PUSH_NULL":
            stack.append(_NULL)
        elif op == "LOAD_ATTR":
            stack.append(f"{_atom(stack.pop())}.{val}")
        elif op == "LOAD_METHOD":
            obj = stack.pop()
            stack += [_NULL, f"{_atom(obj)}.{val}"]
        elif op == "BINARY_SUBSCR":
            key = stack.pop()
            stack.append(f"{_atom(stack.pop())}[{_bare(key)}]")
        elif op == "BINARY_OP":
            right, left = stack.pop(), stack.pop()
            symbol = inst_repr(inst)
            if symbol.endswith("="):  # in-place: a statement in the source, an expression here
                self.statement(path, f"{left} {symbol} {_bare(right)}", writes=left)
                stack.append(left)
            elif symbol == "+" and _is_tuple(left) and _is_tuple(right):  # (a,) + (b,): generated arguments
                stack.append(_tuple(_items(left) + _items(right)))
            else:
                stack.append(f"({_atom(left)} {symbol} {_atom(right)})")
        elif op in ("COMPARE_OP", "IS_OP", "CONTAINS_OP"):
            right, left = stack.pop(), stack.pop()
            symbol = val if op == "COMPARE_OP" else {
                ("IS_OP", 0): "is", ("IS_OP", 1): "is not", ("CONTAINS_OP", 0): "in", ("CONTAINS_OP", 1): "not in"
            }[(op, arg)]
            stack.append(f"({_atom(left)} {symbol} {_atom(right)})")
        elif op in _UNARY:
            stack.append(f"({_UNARY[op]}{_atom(stack.pop())})")
        elif op in ("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET"):
            items = [_bare(v) for v in _pop(stack, arg)]
            if op == "BUILD_TUPLE":
                stack.append(_tuple(items))
            elif op == "BUILD_LIST":
                stack.append(f"[{', '.join(items)}]")
            else:
                stack.append(f"{{{', '.join(items)}}}" if items else "set()")
        elif op == "BUILD_MAP":
            flat = _pop(stack, 2 * arg)
            stack.append("{" + ", ".join(f"{_bare(k)}: {_bare(v)}" for k, v in zip(flat[::2], flat[1::2])) + "}")
        elif op == "BUILD_CONST_KEY_MAP":
            keys = stack.pop()
            values = _pop(stack, arg)
            stack.append(f"dict(zip({keys}, ({', '.join(_bare(v) for v in values)}{',' if arg == 1 else ''})))")
        elif op == "BUILD_SLICE":
            parts = _pop(stack, arg)
            stack.append(f"slice({', '.join(_bare(p) for p in parts)})")
        elif op == "GET_ITER":
            stack.append(f"iter({_bare(stack.pop())})")
        elif op == "LIST_TO_TUPLE":
            stack.append(f"tuple({_bare(stack.pop())})")
        elif op in ("LIST_EXTEND", "SET_UPDATE", "DICT_UPDATE", "DICT_MERGE", "LIST_APPEND", "SET_ADD"):
            value = stack.pop()
            target = stack[-arg]
            method = {"LIST_EXTEND": "extend", "SET_UPDATE": "update", "DICT_UPDATE": "update",
                      "DICT_MERGE": "update", "LIST_APPEND": "append", "SET_ADD": "add"}[op]
            temp = self.temp()
            self.statement(path, f"{temp} = {_bare(target)}")
            self.emit(path, f"{temp}.{method}({_bare(value)})")
            stack[-arg] = temp
        elif op == "KW_NAMES":
            path.kw_names = val
        elif op == "CALL":
            names, path.kw_names = path.kw_names, ()
            args = _pop(stack, arg)
            second, first = stack.pop(), stack.pop()
            if first is _NULL or second is _NULL:  # NULL below the callable, or above it (3.13)
                callee = second if first is _NULL else first
            else:
                callee, args = first, [second, *args]
            positional = args[: len(args) - len(names)]
            keywords = [f"{k}={_bare(v)}" for k, v in zip(names, args[len(positional):])]
            stack.append(f"{_atom(callee)}({', '.join([_bare(a) for a in positional] + keywords)})")
        elif op == "CALL_FUNCTION_EX":
            kwargs = stack.pop() if arg & 1 else None
            args = stack.pop()
            callee = stack.pop()
            if callee is _NULL:  # 3.13: ``[callable, NULL, args]``
                callee = stack.pop()
            elif stack and stack[-1] is _NULL:
                stack.pop()
            positional = _items(args) if _is_tuple(args) else [f"*{_atom(args)}"]
            extra = [f"**{_atom(kwargs)}"] if kwargs is not None else []
            stack.append(f"{_atom(callee)}({', '.join(positional + extra)})")
        elif op == "UNPACK_SEQUENCE":
            value = stack.pop()
            stores = self.instructions[nxt:nxt + arg]
            names = [_ident(i.argval) for i in stores if i.opname in _STORES]
            if len(names) == arg and len(set(names)) == arg:  # ``a, b = value``
                for name in names:
                    self.flush(path, writes=name)
                self.emit(path, f"{', '.join(names)}{',' if arg == 1 else ''} = {_bare(value)}")
                return nxt + arg
            temps = [self.temp() for _ in range(arg)]
            self.statement(path, f"{', '.join(temps)}{',' if arg == 1 else ''} = {_bare(value)}")
            stack += reversed(temps)
        elif op in _STORES:
            self.statement(path, f"{_ident(val)} = {_bare(stack.pop())}", writes=_ident(val))
        elif op == "STORE_ATTR":
            obj, value = stack.pop(), stack.pop()
            self.statement(path, f"{_atom(obj)}.{val} = {_bare(value)}")
        elif op == "STORE_SUBSCR":
            key, obj, value = stack.pop(), stack.pop(), stack.pop()
            self.statement(path, f"{_atom(obj)}[{_bare(key)}] = {_bare(value)}")
        elif op in _DELETES:
            self.statement(path, f"del {_ident(val)}", writes=_ident(val))
        elif op == "DELETE_ATTR":
            self.statement(path, f"del {_atom(stack.pop())}.{val}")
        elif op == "DELETE_SUBSCR":
            key, obj = stack.pop(), stack.pop()
            self.statement(path, f"del {_atom(obj)}[{_bare(key)}]")
        elif op == "POP_TOP":
            value = stack.pop()
            if value is not _NULL and "(" in value and not value.startswith("__tmp"):
                self.statement(path, _bare(value))
        elif op == "COPY":
            self.flush(path)
            stack.append(stack[-arg])
        elif op == "SWAP":
            stack[-1], stack[-arg] = stack[-arg], stack[-1]
        elif op == "RETURN_VALUE":
            self.statement(path, f"return {_bare(stack.pop())}")
            return None
        elif op == "JUMP_FORWARD":
            self.flush(path)
            line = self.instructions[inst.target].lineno
            if line and not path.native:  # the first jump enters the copied body at the graph break
                self.emit(path, f"# graph break: line {line} of the original code runs natively")
                path.native = True
                if line not in self.native_lines:
                    self.native_lines.append(line)
            return inst.target
        elif op in _BRANCHES:
            self.flush(path)
            cond = _BRANCHES[op].format(_atom(stack.pop()))
            self.emit(path, f"if {cond}:")
            taken = _Path(list(stack), path.indent + 1)
            taken.native = path.native
            taken.lines = self.run(inst.target, taken)
            path.lines += taken.lines
            self.emit(path, "else:")
            path.indent += 1
        else:
            raise _Stop()
        return nxt


def decompile(code: types.CodeType, labels: dict[int, str] | None = None) -> Decompiled:
    """``code`` as Python source, with the ``dis`` listing beside it.

    Args:
        code: a code object bytegraph generated (a transformed frame or a
            compiled resume function); plain user code decompiles too while it
            stays within straight-line code and forward branches.
        labels: ``id(constant) -> name`` for constants the caller can name
            better (``__compiled_graph_0``); others are named from their type.

    Returns:
        A :class:`Decompiled`.
    """
    listing = dis.Bytecode(code).dis()
    worker = _Decompiler(code, labels or {})
    try:
        body = worker.run(0, _Path([], 1))
    except Exception as e:  # a bug here must not cost the user the rest of the report
        return Decompiled(f"# could not decompile {code.co_name}: {type(e).__name__}: {e}\n", {}, listing, False)
    header = "" if code.co_name.isidentifier() else f"# {code.co_qualname}\n"
    source = f"{header}def {_ident(code.co_name)}({_signature(code)}):\n" + "\n".join(body) + "\n"
    return Decompiled(source, worker.names, listing, worker.complete, worker.native_lines)


def _ident(name: str) -> str:
    """``name`` as a Python identifier: generated and pytest-rewritten code have
    locals such as ``@py_assert1``, code objects names such as ``<lambda>``."""
    if name.isidentifier():
        return name
    return "__" + (re.sub(r"\W+", "_", name).strip("_") or "name")


def _signature(code: types.CodeType) -> str:
    names = [_ident(name) for name in code.co_varnames]
    positional = names[: code.co_argcount]
    params = list(positional)
    if code.co_posonlyargcount:
        params.insert(code.co_posonlyargcount, "/")
    rest = code.co_argcount + code.co_kwonlyargcount
    if code.co_flags & inspect.CO_VARARGS:
        params.append("*" + names[rest])
    elif code.co_kwonlyargcount:
        params.append("*")
    params += names[code.co_argcount:rest]
    if code.co_flags & inspect.CO_VARKEYWORDS:
        params.append("**" + names[rest + bool(code.co_flags & inspect.CO_VARARGS)])
    return ", ".join(params)


def _literal(value: Any) -> bool:
    """Whether ``repr(value)`` is a Python literal that evaluates back to ``value``."""
    if value is None or value is Ellipsis or type(value) in (bool, int, str, bytes):
        return True
    if type(value) in (float, complex):
        return all(math.isfinite(part) for part in (value.real, value.imag))
    if type(value) in (tuple, frozenset):
        return type(value) is tuple and all(_literal(v) for v in value)
    return False


def _const_label(value: Any) -> str:
    if isinstance(value, types.ModuleType):
        base = value.__name__
    else:
        base = getattr(value, "__name__", None) or getattr(getattr(value, "code", None), "co_name", None) or (
            type(value).__name__)
    cleaned = re.sub(r"\W", "_", str(base)).strip("_") or "const"
    return f"__{cleaned}"


def _is_tuple(expr: Any) -> bool:
    """Whether ``expr`` is a tuple display this module wrote (``()``, ``(a,)``, ``(a, b)``)."""
    return isinstance(expr, str) and expr.startswith("(") and _balanced_prefix(expr) and (
        expr == "()" or "," in _top_level(expr[1:-1]))


def _items(expr: str) -> list[str]:
    """The items of a tuple display."""
    inner = expr[1:-1]
    cuts = [i for i, ch, depth in _scan(inner) if ch == "," and depth == 0]
    parts = [inner[a + 1:b].strip() for a, b in zip([-1, *cuts], [*cuts, len(inner)])]
    return [p for p in parts if p]


def _tuple(items: list[str]) -> str:
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def _pop(stack: list, n: int) -> list:
    if n == 0:
        return []
    values = stack[-n:]
    del stack[-n:]
    return values


def _atom(expr: Any) -> str:
    """``expr`` safe to call, index or take an attribute of."""
    if expr is _NULL:
        raise _Stop()
    return expr if not _top_level(expr) & {" ", ","} else f"({expr})"


def _bare(expr: Any) -> str:
    """``expr`` without parentheses that only group it (a tuple keeps its own)."""
    if expr is _NULL:
        raise _Stop()
    if expr.startswith("(") and expr != "()" and _balanced_prefix(expr) and "," not in _top_level(expr[1:-1]):
        return expr[1:-1]
    return expr


def _scan(text: str):
    """``(index, char, depth)`` for each character of ``text`` outside string
    literals; ``depth`` counts the brackets open after it."""
    depth, quote, escaped = 0, None, False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
            continue
        depth += (ch in "([{") - (ch in ")]}")
        yield i, ch, depth


def _top_level(text: str) -> set[str]:
    """The characters of ``text`` outside brackets and string literals."""
    return {ch for _, ch, depth in _scan(text) if depth == 0 and ch not in ")]}"}


def _balanced_prefix(expr: str) -> bool:
    """Whether the bracket that opens ``expr`` closes at its last character."""
    return all(depth > 0 for i, _, depth in _scan(expr) if i < len(expr) - 1)


def inst_repr(inst: Instruction) -> str:
    """The operator symbol of a BINARY_OP (``+``, ``@``, ``+=``...)."""
    return dis._nb_ops[inst.arg][1]  # (name, symbol) pairs, indexed by the oparg
