"""The package's layering, read from its source (``ast``; nothing is traced).

- the variables layer never imports the translator, at run time or for typing;
  it uses the translator and the OutputGraph only through what
  ``bytegraph/variables/tx.py`` lists (:class:`Tx`, :class:`Output`), exactly;
- no module imports a bytegraph module inside a function;
- every function a higher module provides (``tx.PROVIDED``) is provided once
  ``bytegraph`` is imported;
- no file in ``bytegraph/`` is over 600 lines; ``variables/`` has at most 12
  files at its top level, and each subpackage says what it owns.
"""
import ast
import inspect
import pathlib

import bytegraph
from bytegraph.graph.output_graph import OutputGraph
from bytegraph.translator.base import InstructionTranslatorBase
from bytegraph.translator.inline import InliningTranslator
from bytegraph.variables import tx as protocol

PACKAGE = pathlib.Path(bytegraph.__file__).parent
VARIABLES = PACKAGE / "variables"


def _modules(root: pathlib.Path) -> list[tuple[pathlib.Path, ast.Module]]:
    return [(p, ast.parse(p.read_text())) for p in sorted(root.rglob("*.py"))]


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and not node.level:
        return [node.module or ""]
    return []


def test_variables_never_import_the_translator():
    found = [f"{p.relative_to(PACKAGE)}:{n.lineno}" for p, tree in _modules(VARIABLES) for n in ast.walk(tree)
             for name in _imported(n) if name.startswith("bytegraph.translator")]
    assert not found, f"variables/ imports the translator at {found}: use the Tx protocol (variables/tx.py)"


def test_no_function_local_import_of_bytegraph():
    found = []
    for p, tree in _modules(PACKAGE):
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found += [f"{p.relative_to(PACKAGE)}:{n.lineno}" for n in ast.walk(fn)
                          for name in _imported(n) if name.startswith("bytegraph")]
    assert not found, f"imports of bytegraph modules inside functions at {found}"


def test_every_provided_function_is_provided():
    assert [p.__name__ for p in protocol.PROVIDED if not p.provided] == []
    declared = {name for name, value in vars(protocol).items() if isinstance(value, protocol.Provided)}
    assert declared == {p.__name__ for p in protocol.PROVIDED}


def _protocol_members(cls: type) -> set[str]:
    names = {n for n in vars(cls) if not n.startswith("_")}
    return names | set(getattr(cls, "__annotations__", {}))


def _uses() -> tuple[set[str], set[str]]:
    """Attributes of ``tx`` (and of the frames ``tx.root()``/``tx.user_frames()``
    give, and a generator's ``frame``) and of ``tx.output`` read in variables/."""
    tx_attrs, output_attrs = set(), set()
    for _, tree in _modules(VARIABLES):
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.Lambda)):
                continue
            frames, outputs = {"tx", "tx.root()", "self.frame"}, {"tx.output", "self.output"}
            for n in ast.walk(fn):
                if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and (
                        ast.unparse(n.value) == "tx.output"):
                    outputs.add(n.targets[0].id)
                if isinstance(n, ast.comprehension) and "user_frames" in ast.unparse(n.iter):
                    frames.add(ast.unparse(n.target))
            for n in ast.walk(fn):
                if isinstance(n, ast.Attribute):
                    base = ast.unparse(n.value)
                    if base in frames:
                        tx_attrs.add(n.attr)
                    elif base in outputs:
                        output_attrs.add(n.attr)
    return tx_attrs, output_attrs


def test_the_tx_protocol_lists_exactly_what_variables_use():
    tx_attrs, output_attrs = _uses()
    assert tx_attrs == _protocol_members(protocol.Tx) | _protocol_members(protocol.GeneratorFrame)
    assert output_attrs == _protocol_members(protocol.Output)


def test_the_translator_implements_the_protocols():
    def attributes(cls: type) -> set[str]:  # names its __init__ assigns on self, and everything on the class
        tree = ast.parse(inspect.getsource(cls.__init__).strip())
        assigned = {t.attr for n in ast.walk(tree) if isinstance(n, (ast.Assign, ast.AnnAssign))
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                    if isinstance(t, ast.Attribute) and ast.unparse(t.value) == "self"}
        return assigned | set(dir(cls))

    assert _protocol_members(protocol.Tx) - attributes(InstructionTranslatorBase) == set()
    generator = _protocol_members(protocol.GeneratorFrame) - _protocol_members(protocol.Tx)
    assert generator - attributes(InliningTranslator) == set()
    assert _protocol_members(protocol.Output) - attributes(OutputGraph) == set()


def test_files_are_small_and_variables_is_a_neighbourhood():
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py") if (n := len(p.read_text().splitlines())) > 600}
    assert not long, f"files over 600 lines: {long}"
    top = [p.name for p in VARIABLES.iterdir() if p.is_file() and p.suffix == ".py"]
    assert len(top) <= 12, top
    for package in (p for p in VARIABLES.iterdir() if (p / "__init__.py").exists()):
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text()))
        assert doc, f"variables/{package.name}/__init__.py says nothing of what it owns"
