"""The compile report, as a user meets it: the HTML page of a program with graph
breaks, a recompile, dynamic shapes and a nested call; the decompiled code;
``bytegraph run``'s command line; the page in a real browser. The report is
under test, not the compiled values (compared with eager by check elsewhere)."""
import importlib
import inspect
import os
import re
import subprocess
import sys

import pytest
import torch

import bytegraph
from bytegraph.cli import main
from bytegraph.dropin import serving_torch_compile
from bytegraph.report import model
from bytegraph.runtime import metrics
from bytegraph.testing import same
from browser import browse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def program():
    """tests/report_program.py imported with torch.compile served by bytegraph."""
    sys.modules.pop("tests.report_program", None)
    with serving_torch_compile():
        module = importlib.import_module("tests.report_program")
    yield module
    sys.modules.pop("tests.report_program", None)


def _line(fn, text):
    """The line number of the first line of ``fn`` containing ``text``."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def test_report_shows_breaks_graphs_guards_and_recompiles(program, tmp_path):
    torch.manual_seed(0)
    compiled = program.main()
    eager_funcs = {name: inspect.unwrap(getattr(program, name)) for name in ("with_breaks", "no_breaks")}
    torch.manual_seed(0)
    with pytest.MonkeyPatch.context() as mp:
        for name, fn in eager_funcs.items():
            mp.setattr(program, name, fn)
        assert same(program.main(), compiled)  # the compiled run computed what eager computes
    stats = list(metrics.FRAMES.values())
    report = model.build()
    page = open(bytegraph.write_report(tmp_path / "r.html")).read()

    # every graph break once, at its line of with_breaks, with its gb_type, explanation and hints
    [src] = [f for f in report.files if f.filename.endswith("report_program.py")]
    lines = {line.number: line for fn in src.functions for line in fn.lines}
    marked = {n: [b.record.gb_type for b in line.breaks] for n, line in lines.items() if line.breaks}
    assert marked == {_line(program.with_breaks, "print("): ["print"],
                      _line(program.with_breaks, "if z.sum()"): ["data-dependent branching"]}
    assert [b.record.gb_type for b in report.breaks] == ["print", "data-dependent branching"]
    assert all(b.count == 1 for b in report.breaks)  # with_breaks is called once
    for b in report.breaks:
        assert f"[{b.record.gb_type}]" in page and b.record.explanation in page
        assert all(hint.replace("'", "&#39;") in page for hint in b.record.hints)
    # the resume functions are named by the function they continue and the line they resume at
    labels = [f.label for f in report.frames]
    assert labels[0] == "with_breaks" and "no_breaks" in labels
    resumed = [label for label in labels if label.startswith("with_breaks, resumed at line ")]
    assert len(resumed) == 2  # after the print, after the branch taken
    assert "resume_in_" not in page

    # every graph, its nodes linked to the user lines they came from, the inlined helper's too, and back
    all_graphs = [g for s in stats for g in s.graphs]
    assert report.graphs == len(all_graphs) and len(all_graphs) == len(re.findall(r'<details class="graph" id="graph\d+"', page))
    cos, sin = lines[_line(program.with_breaks, "x.cos()")], lines[_line(program.helper, "y.sin()")]
    assert cos.ops == cos.own == 2 and [g for g, _ in cos.graphs] == [0]  # cos, add
    assert sin.ops == 2 and sin.graphs  # sin, mul, in the graph after the print
    call = lines[_line(program.with_breaks, "helper(y)")]
    assert call.ops == sin.ops and call.own == 0  # the helper's ops, made under the call line
    [(graph, node_anchor)] = cos.graphs
    assert f'href="#{node_anchor}"' in page and f'id="{node_anchor}"' in page  # source line -> FX node
    assert f'href="#{cos.anchor}"' in page and f'id="{cos.anchor}"' in page  # FX node -> source line
    assert "float32[4, 3]" in page

    # recompile history and guards in words, with the dynamic size as a symbol
    [nb] = [f for f in report.frames if f.label == "no_breaks"]
    assert [c.reason for c in nb.compiles] == [None, "tensor 'x' size mismatch at index 0: expected 4, got 6"]
    assert nb.recompiles == [("tensor 'x' size mismatch at index 0: expected 4, got 6", 1)]
    inputs = next(g for g in nb.compiles[1].guard_groups if g.name == "inputs")
    facts = dict(inputs.lines)["x"]
    assert facts.startswith("float32 tensor of shape (s0, 3)") and "s0 >= 2" in facts
    assert "float32 tensor of shape (s0, 3)" in page and "expected 4, got 6" in page
    assert "___c" not in str(nb.compiles[1].guard_groups)
    index = page.split('<table id="index"', 1)[1].split("</table>", 1)[0]
    assert len(re.findall(r"<tr>\s*<td><a href=\"#fr", index)) == len(report.frames)  # the index: one row a frame
    assert f"<b>{report.graphs}</b>graphs" in page and f"<b>{len(report.breaks)}</b>graph breaks" in page
    # one static file: nothing fetched from elsewhere
    assert not re.search(r'(src|href)="(https?:)?//', page) and "<link" not in page and "@import" not in page


def test_decompiled_code_compiles_and_runs_as_eager(program):
    program.main()
    report = model.build()
    compiles = [c for f in report.frames for c in f.compiles]
    assert compiles
    for c in compiles:
        compile(c.decompiled.source, "<decompiled>", "exec")  # every frame and resume function
        assert c.decompiled.listing and c.decompiled.complete
        assert re.search(r"__compiled_graph_\d+\(", c.decompiled.source)
    [nb] = [f for f in report.frames if f.label == "no_breaks"]
    eager = inspect.unwrap(program.no_breaks)
    assert eager is not program.no_breaks  # the plain function, to compare with
    for c, rows in zip(nb.compiles, (program.ROWS, program.ROWS + 2)):
        namespace = dict(eager.__globals__, **c.decompiled.names)
        exec(c.decompiled.source, namespace)
        decompiled = namespace["no_breaks"]
        decompiled.__kwdefaults__ = eager.__kwdefaults__
        x = torch.randn(rows, 3)
        assert same(decompiled(x), eager(x))
    # a graph break shows where the original code runs natively, and the resume call after it
    [wb] = [f for f in report.frames if f.label == "with_breaks"]
    source = wb.compiles[0].decompiled.source
    assert "# graph break: line" in source and "runs natively" in source
    assert re.search(r"return __resume_in_with_breaks_at_\d+\(", source)


def _straight_line(a, b, *rest, scale=2, **extra):
    text = "a (tricky, string) ')'"
    pair = (a + b * scale, text)
    items = [a, {"k": b, "rest": rest}, a[0:1], -a if b is not None else a]
    items[0] = len(extra)
    return pair, items, (a,), text.split(",")[0], max(*rest, 0, key=abs)


def test_decompiled_straight_line_code_runs_as_the_original():
    from bytegraph.report.decompile import decompile

    result = decompile(_straight_line.__code__)
    assert result.complete
    namespace = dict(globals(), **result.names)
    exec(result.source, namespace)
    decompiled = namespace["_straight_line"]
    decompiled.__kwdefaults__ = _straight_line.__kwdefaults__
    args = (torch.arange(3.0), torch.ones(3), -5, 3)
    assert same(decompiled(*args, flag=1), _straight_line(*args, flag=1))


def test_decompiled_names_are_identifiers():
    """Code objects named ``<lambda>`` and locals like pytest's ``@py_assert1``
    decompile to valid names; an empty tuple stays a tuple."""
    from bytegraph.report.decompile import decompile

    original = lambda a: (a, (), [a, ()])  # noqa: E731
    code = original.__code__.replace(co_varnames=("@py_assert1",))
    result = decompile(code)
    namespace = dict(result.names)
    exec(result.source, namespace)
    assert result.source.startswith("# ") and namespace["__lambda"](7) == original(7)


def test_decompiler_stops_honestly_at_code_outside_its_shapes():
    from bytegraph.report.decompile import decompile

    def loops(xs):
        total = 0
        for x in xs:
            total += x
        return total

    result = decompile(loops.__code__)
    assert not result.complete and "not decompiled from FOR_ITER" in result.source
    compile(result.source, "<decompiled>", "exec")


def test_plain_page_without_jinja2(program, tmp_path, monkeypatch):
    program.main()
    monkeypatch.setitem(sys.modules, "jinja2", None)  # import jinja2 raises ImportError
    page = open(bytegraph.write_report(tmp_path / "plain.html")).read()
    assert "install bytegraph[report]" in page and "float32 tensor of shape (s0, 3)" in page
    assert "def no_breaks(x" in page and "bytegraph report:" in page


def test_page_without_pygments_is_escaped_plain_code(program, tmp_path, monkeypatch):
    program.main()
    monkeypatch.setitem(sys.modules, "pygments", None)
    page = open(bytegraph.write_report(tmp_path / "plain.html")).read()
    assert '<span class="k">' not in page and "def no_breaks(x, *, k=2):" in page
    assert "print(&quot;a graph break&quot;, file=sys.stderr)" in page  # escaped, not raw


def test_write_report_rejects_a_non_path():
    with pytest.raises(TypeError, match="path"):
        bytegraph.write_report(3)


def test_empty_report_says_nothing_was_compiled(tmp_path):
    page = open(bytegraph.write_report(tmp_path / "empty.html")).read()
    assert "Nothing was compiled." in page


# ---- the command line ------------------------------------------------------------------------

def test_missing_script_is_an_error_without_a_report(capsys, tmp_path):
    status = main(["run", "--report", str(tmp_path / "r.html"), "missing.py"])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err == f"bytegraph: can't open file {os.path.abspath('missing.py')!r}: [Errno 2] No such file or directory\n"
    assert not (tmp_path / "r.html").exists()


def test_missing_module_is_an_error(capsys):
    assert main(["run", "-m", "no_such_package.module"]) == 1
    assert capsys.readouterr().err == "bytegraph: No module named 'no_such_package'\n"


def test_usage_errors(capsys):
    assert main(["run"]) == 2 and "no script, -m module or -c code" in capsys.readouterr().err
    assert main(["run", "--frobnicate", "x.py"]) == 2 and "unknown option --frobnicate" in capsys.readouterr().err
    assert main(["build"]) == 2 and "unknown command 'build'" in capsys.readouterr().err


@pytest.fixture
def restore_sys(monkeypatch):
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))


def test_run_module_keeps_stdout_for_the_program(capsys, tmp_path, restore_sys):
    """``bytegraph run -m`` runs a module as ``python -m`` does; the program's
    stdout stays its own (JSON here), the report goes to stderr and the page."""
    status = main(["run", "--report", str(tmp_path / "r.html"), "-m", "tests.report_program", "--lr", "3"])
    out, err = capsys.readouterr()
    assert status == 0
    assert out == '{"argv": ["--lr", "3"], "results": 4}\n'
    assert "bytegraph report:" in err and "graph breaks (each once" in err
    assert "with_breaks" in (tmp_path / "r.html").read_text()


def test_report_is_written_when_the_program_raises(capsys, tmp_path, restore_sys):
    script = os.path.join(ROOT, "tests", "report_program.py")
    assert main(["run", f"--report={tmp_path / 'r.html'}", script, "--fail"]) == 1  # python's status
    err = capsys.readouterr().err
    assert "ValueError: the program failed" in err and "bytegraph report:" in err
    assert "no_breaks" in (tmp_path / "r.html").read_text()


def test_report_is_written_when_the_program_calls_sys_exit(capsys, tmp_path, restore_sys):
    script = tmp_path / "exits.py"
    script.write_text("import sys, torch\n"
                      "f = torch.compile(lambda x: x - 1, backend='eager')\n"
                      "f(torch.ones(2))\nsys.exit(3)\n")
    assert main(["run", "--report", str(tmp_path / "r.html"), str(script)]) == 3
    assert "1 frame(s)" in capsys.readouterr().err
    assert "&lt;lambda&gt;" in (tmp_path / "r.html").read_text()


def test_report_from_the_environment_variable(tmp_path):
    """``BYTEGRAPH_REPORT=path`` writes the page when the process exits, even by sys.exit."""
    code = ("import torch, bytegraph, sys\n"
            "f = bytegraph.compile(lambda x: x * 2, backend='eager')\n"
            "f(torch.ones(2))\nsys.exit(3)\n")
    env = dict(os.environ, BYTEGRAPH_REPORT=str(tmp_path / "env.html"), PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done.stderr
    assert "wrote the compile report" in done.stderr
    assert "&lt;lambda&gt;" in (tmp_path / "env.html").read_text()


# ---- the page in a browser -------------------------------------------------------------------

def _browse(page, tmp_path, *action):
    return browse(page, tmp_path / "profile", *action)


def test_page_renders_in_a_browser_without_console_errors(program, tmp_path):
    program.main()
    page = bytegraph.write_report(tmp_path / "r.html")
    _, console = _browse(page, tmp_path, f"--screenshot={tmp_path / 'shot.png'}")
    assert console == []
    assert (tmp_path / "shot.png").stat().st_size > 20_000  # a rendered page, not a blank one
    # the probe sees console errors: a page with a script error is caught
    broken = tmp_path / "broken.html"
    broken.write_text("<html><body><script>no_such_function();</script></body></html>")
    assert any("no_such_function" in line for line in _browse(broken, tmp_path, "--dump-dom")[1])


def test_index_sorts_by_a_column_when_its_header_is_clicked(program, tmp_path):
    """Clicking "trace ms" sorts the frames ascending, clicking again descending."""
    program.main()
    page = open(bytegraph.write_report(tmp_path / "r.html")).read()
    probe = """<script>
    var th = document.querySelectorAll("#index th")[8], seen = [];
    function column() { return Array.prototype.map.call(document.querySelectorAll("#index tbody tr"),
                                                        function (r) { return r.cells[8].textContent; }).join(" "); }
    th.click(); seen.push(column()); th.click(); seen.push(column());
    var out = document.createElement("pre"); out.id = "probe"; out.textContent = seen.join("|");
    document.body.appendChild(out);
    </script></body>"""
    (tmp_path / "clicked.html").write_text(page.replace("</body>", probe))
    dom, console = _browse(tmp_path / "clicked.html", tmp_path, "--dump-dom")
    assert console == []
    ascending, descending = ([float(t) for t in run.split()]
                             for run in re.search(r'<pre id="probe">(.*?)</pre>', dom).group(1).split("|"))
    assert len(ascending) == len(model.build().frames) > 1
    assert ascending == sorted(ascending) and descending == ascending[::-1] and ascending != descending
