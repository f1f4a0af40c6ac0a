"""``bytegraph run``: the script runs with torch.compile served by bytegraph,
and the report separates import time from trace and backend time."""
import importlib.metadata
import os
import re
import subprocess
import sys
import zipfile

import pytest

from bytegraph.cli import main

SCRIPT = """
import torch

def f(x):
    return torch.relu(x) + 1

def g(x):
    return x.sin() * 2

x = torch.randn(3)
assert torch.equal(torch.compile(f, backend="eager")(x), f(x))
assert torch.equal(torch.compile(g, backend="eager")(x), g(x))
print("script done")
"""


def test_run_reports_imports_apart_from_trace_and_backend(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(SCRIPT)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    run = subprocess.run([sys.executable, "-m", "bytegraph", "run", str(script)],
                         capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "script done" in run.stdout
    out = run.stderr  # the report
    assert "2 frame(s), 2 graph(s)" in out
    line = next(l for l in out.splitlines() if l.startswith("imports:"))
    total = float(re.match(r"imports: ([0-9.]+) s \(", line).group(1))
    groups = dict(g.split(": ", 1) for g in line[line.index("(") + 1:-1].split("; "))
    parts = {label: {n: float(s) for n, s in (item.rsplit(" ", 2)[:2] for item in text.split(", "))}
             for label, text in groups.items()}
    # torch and bytegraph at start-up (the CLI imports bytegraph first), then torch's frontend package, whose
    # entry points bytegraph run serves; the first FakeTensorMode on first use (its config modules are loaded)
    assert list(parts["start-up"]) == ["torch", "bytegraph", "torch._dynamo"]
    assert list(parts["first use"]) == ["FakeTensorMode's config modules"]
    assert abs(sum(v for p in parts.values() for v in p.values()) - total) < 0.02
    lines = out.splitlines()
    at = next(i for i, l in enumerate(lines) if l.split()[:2] == ["frame", "graphs"])  # the frame table
    header, first, second = (l.split() for l in lines[at:at + 3])
    assert header[-2:] == ["import", "ms"]
    # the first FakeTensorMode is made in the first frame's conversion: its import time is charged there only
    assert float(first[-1]) >= 0 and float(second[-1]) == 0.0


# ---- `bytegraph run` takes what `python` takes ------------------------------------------------

def _bytegraph_run(*args, cwd=None):
    """``python -m bytegraph run ARGS`` in a process of its own."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "bytegraph", *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=cwd)


PROGRAM = """
import sys, torch
f = torch.compile(lambda x: x * 2, backend="eager")
print(sys.argv, f(torch.ones(2)).tolist())
"""


@pytest.fixture
def restore_sys(monkeypatch):
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))


def test_dash_c_runs_code_with_python_argv(capsys, restore_sys):
    assert main(["run", "-c", PROGRAM, "a", "b"]) == 0
    out, err = capsys.readouterr()
    assert out == "['-c', 'a', 'b'] [2.0, 2.0]\n" and "1 frame(s), 1 graph(s)" in err


def test_folder_with_main_runs_it(capsys, tmp_path, restore_sys):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "__main__.py").write_text(PROGRAM)
    assert main(["run", str(tmp_path / "app"), "x"]) == 0
    assert capsys.readouterr().out == f"[{str(tmp_path / 'app')!r}, 'x'] [2.0, 2.0]\n"


def test_zip_with_main_runs_it(capsys, tmp_path, restore_sys):
    with zipfile.ZipFile(tmp_path / "app.zip", "w") as archive:
        archive.writestr("__main__.py", PROGRAM)
    assert main(["run", str(tmp_path / "app.zip")]) == 0
    assert capsys.readouterr().out == f"[{str(tmp_path / 'app.zip')!r}] [2.0, 2.0]\n"


@pytest.mark.parametrize("make, status, message", [
    (lambda p: p.mkdir(), 1, "can't find '__main__' module in {path!r}"),                 # a folder
    (lambda p: zipfile.ZipFile(p, "w").close(), 1, "can't find '__main__' module in {path!r}"),  # a zip
    (lambda p: None, 2, "can't open file {path!r}: [Errno 2] No such file or directory"),  # nothing there
])
def test_program_that_cannot_run_is_one_line_and_pythons_status(capsys, tmp_path, make, status, message):
    path = tmp_path / "program"
    make(path)
    assert main(["run", str(path)]) == status
    out, err = capsys.readouterr()
    assert out == "" and err == f"bytegraph: {message.format(path=str(path))}\n"


def test_package_without_main_is_one_line(capsys, tmp_path, restore_sys, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    monkeypatch.chdir(tmp_path)
    assert main(["run", "-m", "pkg"]) == 1
    assert capsys.readouterr().err == (
        "bytegraph: No module named pkg.__main__; 'pkg' is a package and cannot be directly executed\n")


def test_report_into_a_missing_folder_is_refused_before_the_program_runs(capsys, tmp_path, restore_sys):
    script = tmp_path / "script.py"
    script.write_text("print('the program ran')\n")
    missing = tmp_path / "no" / "r.html"
    assert main(["run", "--report", str(missing), str(script)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (
        f"bytegraph: can't write the report to {str(missing)!r}: no folder {str(missing.parent)!r}\n")


def test_version_and_help():
    version = _bytegraph_run("--version")
    assert version.returncode == 0 and re.fullmatch(r"bytegraph \S+ \(torch \S+\)\n", version.stdout)
    assert version.stdout.split()[1] == importlib.metadata.version("bytegraph")
    helped = _bytegraph_run("--help")
    assert helped.returncode == 0 and helped.stdout.startswith("usage: bytegraph run")


USER_ERROR = """
import torch

def check(x):
    if x.sum() > 0:
        raise ValueError("positive input")
    return x

@torch.compile(backend="eager")
def step(x):
    return check(x * 2) + 1

step(torch.ones(2))
"""


def test_user_error_traceback_has_only_the_programs_frames(tmp_path):
    """The program's exception is printed as python prints it, exit status 1,
    with the program's frames (also the compiled function's, which bytegraph ran)
    and none of bytegraph's or runpy's; the report is still written."""
    script = tmp_path / "user_error.py"
    script.write_text(USER_ERROR)
    done = _bytegraph_run("run", "--report", str(tmp_path / "r.html"), str(script))
    assert done.returncode == 1
    traceback_part = done.stderr[:done.stderr.index("bytegraph report:")]
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', traceback_part)
    lines = USER_ERROR.splitlines()
    at = {text: str(lines.index(text) + 1) for text in ("step(torch.ones(2))", "    return check(x * 2) + 1",
                                                       '        raise ValueError("positive input")')}
    assert frames == [(str(script), at["step(torch.ones(2))"], "<module>"),  # python's frames, eager's lines
                      (str(script), at["    return check(x * 2) + 1"], "step"),
                      (str(script), at['        raise ValueError("positive input")'], "check")]
    assert "bytegraph" not in traceback_part.replace(str(tmp_path), "") and "runpy" not in traceback_part
    assert traceback_part.rstrip().endswith("ValueError: positive input")
    assert (tmp_path / "r.html").exists()
