"""The compile report's page for real models: its size, height and the time
Chromium takes to open it (``python -m benchmarks.report_page``; needs chromium).

For GPT-2 at 2 layers (``make demo``'s model) and 12 layers, and for
``examples/gated_mlp.py``, one fresh process each: compile and run the model
(backend eager), write the page, then open it in headless Chromium, which
reports the time from navigation to the end of the load event with the page
laid out, the page's height as opened and with every ``<details>`` closed.
Prints a table (the issue-28 budgets: under 300 KB and 6,000 px for the demo
page, under 2 s to open a 12-layer model's page).
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars")
_PROBE = """<script>
window.addEventListener("load", function () {
  var height = document.body.scrollHeight, nav = performance.getEntriesByType("navigation")[0];
  var laid_out = performance.now();
  document.querySelectorAll("details").forEach(function (d) { d.open = false; });
  document.title = JSON.stringify({open_ms: laid_out - nav.startTime, load_ms: nav.loadEventStart - nav.startTime,
                                   height: height, collapsed: document.body.scrollHeight});
});
</script></body>"""
_BUILD = """
import sys, runpy, torch, bytegraph
sys.path.insert(0, {root!r})
if {layers!r}:
    from benchmarks.models.hf import _ids, _quiet
    t = _quiet()
    config = t.GPT2Config(n_layer={layers!r}, n_head=4, n_embd=64, vocab_size=1000, n_positions=128,
                          bos_token_id=0, eos_token_id=0)
    bytegraph.compile(t.GPT2LMHeadModel(config).eval(), backend="eager")(input_ids=_ids(2, 16))
else:
    from bytegraph.cli import serving_torch_compile
    with serving_torch_compile():
        runpy.run_path({script!r}, run_name="__main__")
bytegraph.write_report({page!r}, title={name!r})
"""


def measure(name: str, layers: int | None, script: str | None, tmp: Path) -> dict:
    page = tmp / f"{name}.html"
    code = _BUILD.format(root=str(ROOT), layers=layers, script=script, page=str(page), name=name)
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, capture_output=True)
    probe = tmp / f"{name}.probe.html"
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", _PROBE), encoding="utf-8")
    done = subprocess.run([shutil.which("chromium"), *FLAGS, f"--user-data-dir={tmp / ('profile-' + name)}",
                           "--window-size=1400,1000", "--dump-dom", f"file://{probe}"],
                          capture_output=True, text=True, timeout=300, check=True)
    found = json.loads(re.search(r"<title>(.*?)</title>", done.stdout, re.S).group(1).replace("&quot;", '"'))
    return {"page": name, "bytes": page.stat().st_size, **found}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    if shutil.which("chromium") is None:
        print("chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 1
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, layers, script in (("gpt2 (2 layers)", 2, None), ("gpt2 (12 layers)", 12, None),
                                     ("gated_mlp", None, str(ROOT / "examples" / "gated_mlp.py"))):
            rows.append(measure(name, layers, script, Path(tmp)))
    print(f"| {'page':<18} | {'KB':>6} | {'px as opened':>12} | {'px collapsed':>12} | {'open ms':>8} | {'load ms':>8} |")
    print(f"|{'-' * 20}|{'-' * 8}|{'-' * 14}|{'-' * 14}|{'-' * 10}|{'-' * 10}|")
    for r in rows:
        print(f"| {r['page']:<18} | {r['bytes'] / 1000:>6.1f} | {r['height']:>12} | {r['collapsed']:>12} | "
              f"{r['open_ms']:>8.0f} | {r['load_ms']:>8.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
