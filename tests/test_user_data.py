"""User data is data, never code: names and strings taken from the user's values
(attribute names, dict keys, global and parameter names, module names, str
constants) never become source text of the guard function or of the graph's
generated code. Each test feeds generated hostile names (quotes, newlines,
unicode, keywords, expressions with side effects), asserts that nothing of them
runs, and compares every result with eager."""
import enum
import keyword
import types
import unicodedata

import pytest
import torch

import bytegraph
from bytegraph.breaks import InternalError
from bytegraph.guards import guard_code
from bytegraph.guards.guard_code import build_guard_function
from bytegraph.guards.guards import ConstantMatch, Guard, LenMatch
from bytegraph.guards.source import LocalSource
from bytegraph.testing import CompileCounter, same
from tests.helpers import check

#: every hostile name that runs appends here (it must stay empty); reachable as the
#: builtin ``BYTEGRAPH_TEST_RAN`` from any generated code
RAN: list = []

HOSTILE = [
    "a if BYTEGRAPH_TEST_RAN.append(1) is None else a",
    "__import__('builtins').BYTEGRAPH_TEST_RAN.append(2) or a",
    "a'",
    'a"b',
    "a\nb",
    "a\\",
    "}{)(",
    "",
    " ",
    "if",
    "None",
    "\ufb01",  # 'ﬁ': the parser would read it as the identifier 'fi'
    "\u00e9t\u00e9",  # 'été': a plain (NFKC) identifier
    "x\x00y",
    "a#b",
    "1a",
]


@pytest.fixture(autouse=True)
def _nothing_ran(monkeypatch):
    import builtins

    RAN.clear()
    monkeypatch.setattr(builtins, "BYTEGRAPH_TEST_RAN", RAN, raising=False)
    yield
    assert RAN == [], "text from a user value ran as code"


@pytest.fixture
def guard_texts(monkeypatch):
    """Every generated guard function's source, as built."""
    texts = []
    original = guard_code.build_guard_function

    def spy(*args, **kwargs):
        result = original(*args, **kwargs)
        texts.append(result.text)
        return result

    import bytegraph.convert as convert
    monkeypatch.setattr(convert, "build_guard_function", spy)
    return texts


class Holder:
    pass


@pytest.mark.parametrize("name", HOSTILE)
def test_attribute_names_are_constants_in_guards(name, guard_texts):
    obj = Holder()
    setattr(obj, name, torch.ones(2))
    obj.a = obj.fi = torch.full((2,), 7.0)
    fn = lambda o, x: x + getattr(o, name)  # noqa: E731
    check(fn, obj, torch.ones(2))
    if any(c in name for c in "'\"\n\\(#\x00\ufb01"):  # could only be there as code
        assert not any(name in text for text in guard_texts)
    compiled = bytegraph.compile(fn, backend=CompileCounter())  # not check: the attribute changes between calls
    compiled(obj, torch.ones(2))
    setattr(obj, name, torch.full((2,), 3.0))  # the guarded attribute changes: eager's value again
    assert same(compiled(obj, torch.ones(2)), fn(obj, torch.ones(2)))


def test_non_nfkc_attribute_is_not_read_as_its_normalised_name():
    obj = Holder()
    setattr(obj, "\ufb01", torch.ones(2))
    obj.fi = torch.zeros(2)
    fn = lambda o, x: x + getattr(o, "\ufb01")  # noqa: E731
    compiled = bytegraph.compile(fn, backend="eager")  # not check: the attribute changes between calls
    assert same(compiled(obj, torch.ones(2)), fn(obj, torch.ones(2)))
    setattr(obj, "\ufb01", torch.full((2,), 5.0))
    assert same(compiled(obj, torch.ones(2)), fn(obj, torch.ones(2)))


def test_dict_keys_become_distinct_graph_inputs():
    keys = [k for k in HOSTILE]
    d = {k: torch.full((2,), float(i)) for i, k in enumerate(keys)}

    def fn(d, x):
        for k in keys:
            x = x + d[k] * 2
        return x

    cnt = CompileCounter()
    check(fn, d, torch.ones(2), backend=cnt)
    [gm] = cnt.graphs
    names = [n.target for n in gm.graph.nodes if n.op == "placeholder"]
    assert len(set(names)) == len(names) == len(keys) + 1
    assert all(name.isidentifier() and name.isascii() for name in names)


@pytest.mark.parametrize("name", HOSTILE)
def test_dict_key_presence_and_str_values_are_constants(name, guard_texts):
    def fn(d, s, x):
        if name in d and s == name:
            return x + 1
        return x - 1

    check(fn, {name: 1}, name, torch.ones(2))
    check(fn, {}, name + "!", torch.ones(2))
    assert not any("'" in text or '"' in text for text in guard_texts)


@pytest.mark.parametrize("name", HOSTILE)
def test_global_and_parameter_names_from_code_objects(name):
    def template(x, p):
        return x + G * p  # noqa: F821 (renamed below)

    scope = {name: torch.full((2,), 2.0)}
    code = template.__code__.replace(co_names=(name,))
    fn = types.FunctionType(code, scope, "fn")
    positional = types.FunctionType(code.replace(co_varnames=("x", name)), scope, "positional")
    check(fn, torch.ones(2), 3.0)
    # compiled if the name is an identifier the parser reads as itself, else run natively
    plain = name.isidentifier() and not keyword.iskeyword(name) and unicodedata.normalize("NFKC", name) == name
    check(positional, torch.ones(2), 3.0, graphs=1 if plain else 0)
    compiled = bytegraph.compile(fn, backend="eager")  # not check: the global changes between calls
    compiled(torch.ones(2), 3.0)
    scope[name] = torch.full((2,), -1.0)  # the global changes: the guard sees it
    assert same(compiled(torch.ones(2), 3.0), fn(torch.ones(2), 3.0))


@pytest.mark.parametrize("name", ["len", "type", "torch", "getattr", "math", "Exception", "___c0", "___cells"])
def test_parameters_named_like_guard_internals(name):
    src = f"def fn(x, {name}, y=2.0):\n    return x * {name} + y\n"
    scope: dict = {}
    exec(compile(src, "<test>", "exec"), scope)  # a user function with that parameter name
    fn = scope["fn"]
    for value in (3.0, 4.0):
        check(fn, torch.ones(2), value)
    check(fn, calls=[(torch.ones(2), value) for value in (3.0, 4.0, 3.0)], dynamic=False, graphs=2)
    check(fn, torch.ones(2), kwargs={name: 5.0})


@pytest.mark.parametrize("name", ['a"b', "a\nb", "}{)(", "if", "\ufb01"])
def test_submodule_names(name):
    model = torch.nn.Module()
    model.add_module(name, torch.nn.Linear(2, 2))
    model.add_module("fi", torch.nn.Linear(2, 2))

    def fn(m, x):
        return getattr(m, name)(x) + sum(c(x) for c in m.children())

    check(fn, model, torch.ones(2))


def test_hostile_default_values_and_signature_attribute():
    def fn(x, s="') or BYTEGRAPH_TEST_RAN.append(1) or ('", *, k="a\nb"):
        return x + len(s) + len(k)

    fn.__signature__ = None  # guards bind arguments by the code's own signature
    check(fn, torch.ones(2))


def test_keyword_parameter_that_is_not_an_identifier_runs_natively():
    def template(x, p):
        return x + p

    fn = types.FunctionType(template.__code__.replace(co_varnames=("x", "p q")), {}, "fn")
    check(fn, torch.ones(2), 2.0, graphs=0)  # runs natively
    check(fn, torch.ones(2), kwargs={"p q": 3.0}, graphs=0)


class Hostile(enum.IntEnum):
    A = 2

    def __repr__(self):
        return "__import__('builtins').BYTEGRAPH_TEST_RAN.append(3) or 2"


def test_constant_whose_repr_is_code_never_reaches_fx_code():
    def fn(x):
        return torch.add(x, x, alpha=Hostile.A) * 2

    cnt = CompileCounter()  # the add runs natively; the product after it is the graph
    check(fn, torch.ones(2), backend=cnt, breaks=1, gb_types=["argument FX cannot render"])
    for gm in cnt.graphs:
        assert "BYTEGRAPH_TEST_RAN" not in gm.code


class _TextGuard(Guard):
    """A guard whose check is the given source text (what a buggy guard kind would write)."""

    def __init__(self, text):
        super().__init__(None)
        object.__setattr__(self, "text", text)

    def key(self):
        return ("_TextGuard", self.text)

    def check(self, names, value):
        return self.text


@pytest.mark.parametrize("text, message", [
    ("'a' == 'a'", "string constant 'a'"),
    ("f'a{1}' == 1", "string constant 'a'"),
    ("b'x' == 1", "string constant b'x'"),
    ("(1, ('deep',)) == 1", "string constant 'deep'"),
    ("undefined_name is None", r"unknown global\(s\) \['undefined_name'\]"),
    ("[q for q in (1,) if q is BYTEGRAPH_TEST_RAN]", "unknown global"),  # nested code objects too
])
def test_guard_source_with_user_text_is_refused(text, message):
    def fn(x, *, scale=2.0):  # (a keyword-only default: the compiler's own string constant is allowed)
        return x * scale

    with pytest.raises(InternalError, match=message):
        build_guard_function(fn.__code__, fn, [_TextGuard(text)])


@pytest.mark.parametrize("name", ["len", "type", "torch", "Exception"])
def test_guard_source_calls_builtins_a_parameter_shadows(name):
    src = f"def fn(x, {name}, y=1):\n    return x\n"
    scope: dict = {}
    exec(compile(src, "<test>", "exec"), scope)
    fn = scope["fn"]
    guards = [LenMatch(LocalSource(name), list, 2), _TextGuard("type(x) is torch.Tensor"),
              _TextGuard("isinstance(y, int)"), ConstantMatch(LocalSource("y"), 1)]
    check = build_guard_function(fn.__code__, fn, guards).check
    assert check(None, torch.ones(1), [1, 2]) is True
    assert check(None, torch.ones(1), **{name: [3, 4]}) is True
    assert check(None, torch.ones(1), [1]) is False
    assert check(None, torch.ones(1), (5, 6)) is False
    assert check(None, torch.ones(1), [1, 2], y=2) is False
    assert check(None, [1], [1, 2]) is False
