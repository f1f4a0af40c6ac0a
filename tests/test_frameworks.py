"""Training frameworks that call torch.compile, run under ``bytegraph run``:
PyTorch Lightning (``trainer.fit(torch.compile(lit))`` and a compiled submodule,
with and without ``self.log``), HF's ``Trainer(torch_compile=True)`` (accelerate
compiles the model) and accelerate's ``unwrap_model``. Each trains or runs a
script of ``tests/frameworks/`` in a process of its own and compares with the
same script run eagerly: the losses step by step, exactly (backend eager).

Slow tier, and marked ``frameworks``: they need the ``frameworks`` extra
(``make test-all`` installs it); without it they fail with the install hint.
"""
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.frameworks]
HERE = pathlib.Path(__file__).parent / "frameworks"
ROOT = HERE.parent.parent


@pytest.fixture(autouse=True)
def _frameworks_installed():
    missing = [m for m in ("pytorch_lightning", "accelerate", "transformers") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.fail(f"missing {missing}: install the frameworks extra (make test-all does: "
                    f"pip install -c requirements-dev.txt -e '.[bench,frameworks]')")


def _run(script, *args, served, tmp_path):
    """The JSON line ``script`` prints, run by ``python`` or (``served``) ``bytegraph run``."""
    command = [sys.executable, *(["-m", "bytegraph", "run"] if served else []), str(HERE / script), *args]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


#: (graphs, graph breaks) bytegraph's report counts for each way in, with the frameworks extra's
#: Lightning: the compiled module's training_step is one graph (its unused batch_idx is not guarded),
#: as under torch.compile; with self.log it breaks in Lightning's and torchmetrics' code (ten breaks, each
#: attribute store of torchmetrics' custom __setattr__ in Metric.reset among them; torch.compile 2.13
#: makes no graph of that step); a compiled submodule is one graph either way
LIGHTNING_COUNTS = {("module", False): (1, 0), ("module", True): (6, 10), ("submodule", False): (1, 0),
                    ("submodule", True): (1, 0)}


@pytest.mark.parametrize("log", [False, True], ids=["no_log", "self_log"])
@pytest.mark.parametrize("how", ["module", "submodule"])
def test_lightning_trains_a_compiled_module_with_eagers_losses(how, log, tmp_path):
    extra = ["log"] if log else []
    eager, _ = _run("lightning_fit.py", "eager", *extra, served=False, tmp_path=tmp_path)
    served, report = _run("lightning_fit.py", how, *extra, served=True, tmp_path=tmp_path)
    assert served == eager and len(eager["losses"]) == 8
    counts = re.search(r"bytegraph report: \d+ frame\(s\), (\d+) graph\(s\), (\d+) graph break\(s\)", report)
    assert tuple(map(int, counts.groups())) == LIGHTNING_COUNTS[how, log]


def test_hf_trainer_with_torch_compile_trains_with_eagers_losses(tmp_path):
    """Trainer(torch_compile=True): accelerate compiles the model; the losses are eager's,
    and the model the Trainer holds and unwraps is what it is under torch.compile."""
    eager, _ = _run("hf_trainer.py", "eager", str(tmp_path / "eager"), served=False, tmp_path=tmp_path)
    torch_compile, _ = _run("hf_trainer.py", "compile", str(tmp_path / "torch"), served=False, tmp_path=tmp_path)
    served, report = _run("hf_trainer.py", "compile", str(tmp_path / "served"), served=True, tmp_path=tmp_path)
    assert served["losses"] == eager["losses"] and len(eager["losses"]) == 4
    assert (served["wrapped"], served["unwrapped"]) == (torch_compile["wrapped"], torch_compile["unwrapped"])
    assert " 0 graph(s)" not in report


def test_accelerate_sees_a_compiled_module_as_torch_compiles_one(tmp_path):
    """accelerate's checks answer as for torch.compile's module (run in a process of its own)."""
    torch_compile, _ = _run("accelerate_unwrap.py", served=False, tmp_path=tmp_path)
    served, _ = _run("accelerate_unwrap.py", served=True, tmp_path=tmp_path)
    assert served == torch_compile
    assert served["is_compiled"] and served["kept"] == "OptimizedModule" and all(served["unwrapped_params"])
