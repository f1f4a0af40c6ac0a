"""pytest conftest for the CPython semantics suite run on an older interpreter.

The suite's files come from CPython 3.13's ``Lib/test`` (as ported in PyTorch's repository) and
import names that only 3.13 has: helpers of ``test.support`` and a few newer stdlib names
(``collections.abc.Buffer``, ``enum.EnumDict``). On Python 3.11 and 3.12 this conftest adds
stand-ins for them before any test module is imported, so the files collect; each stand-in keeps
the contract the tests rely on, not CPython's implementation, and tests of the stand-in itself
fail or pass alike under every frontend. It is copied next to the test files as ``conftest.py``
by ``tools/peer/cpython_suite.py build``. Two files cannot collect on 3.11 whatever the stand-ins:
``test_functools`` (PEP 695 syntax, ``def f[T]()``) and ``test_enum`` (builds a member-less
``Enum('enum_type', type=int)`` at import, which 3.11 refuses).
"""
import abc
import collections.abc
import contextlib
import enum
import sys
import types

import test.support as support


def _c_recursion_limit():
    """The depth at which C-level recursion in the interpreter raises RecursionError."""
    return 10000


@contextlib.contextmanager
def _no_immortalization():
    """3.13 can make objects immortal; older interpreters never do, so there is nothing to stop."""
    yield


_MISSING = {
    "get_c_recursion_limit": _c_recursion_limit,
    "exceeds_recursion_limit": lambda: _c_recursion_limit() * 2,
    "suppress_immortalization": lambda suppress=True: _no_immortalization(),
    "skip_if_sanitizer": lambda *a, **k: (lambda f: f),
    "Py_GIL_DISABLED": False,
    "Py_TRACE_REFS": hasattr(sys, "getobjects"),
    "is_wasi": sys.platform == "wasi",
    "is_emscripten": sys.platform == "emscripten",
    "force_not_colorized": lambda func: func,
    "force_not_colorized_test_class": lambda cls: cls,
}
for _name, _value in _MISSING.items():
    if not hasattr(support, _name):
        setattr(support, _name, _value)


class _ExceptionIsLikeMixin:
    """assertExceptionIsLike(exc, template): same type and args, recursively for exception groups."""

    def assertExceptionIsLike(self, exc, template):
        if exc is None and template is None:
            return
        if template is None:
            self.fail(f"unexpected exception: {exc}")
        if exc is None:
            self.fail(f"expected an exception like {template!r}, got None")
        group_type = getattr(__builtins__, "BaseExceptionGroup", None) if isinstance(__builtins__, types.ModuleType) \
            else __builtins__.get("BaseExceptionGroup")
        if group_type is None or not isinstance(exc, group_type):
            self.assertEqual(exc.__class__, template.__class__)
            self.assertEqual(exc.args[0], template.args[0])
        else:
            self.assertEqual(exc.message, template.message)
            self.assertEqual(len(exc.exceptions), len(template.exceptions))
            for e, t in zip(exc.exceptions, template.exceptions):
                self.assertExceptionIsLike(e, t)


class _Buffer(abc.ABC):
    """Objects that implement the buffer protocol's Python form (``__buffer__``, PEP 688)."""

    @classmethod
    def __subclasshook__(cls, other):
        return True if any("__buffer__" in vars(base) for base in other.__mro__) else NotImplemented


if not hasattr(collections.abc, "Buffer"):
    collections.abc.Buffer = _Buffer
if not hasattr(enum, "EnumDict"):
    enum.EnumDict = enum._EnumDict  # the class namespace of Enum classes, public from 3.13

if "test.support.testcase" not in sys.modules:
    try:
        import test.support.testcase  # noqa: F401  (3.12 and later)
    except ImportError:
        _module = types.ModuleType("test.support.testcase")
        _module.ExceptionIsLikeMixin = _ExceptionIsLikeMixin
        sys.modules["test.support.testcase"] = _module
        support.testcase = _module
