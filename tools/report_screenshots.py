"""Screenshots of the compile report for the README (``docs/report_gpt2.png``,
``docs/report_gated.png``): the pages ``make demo`` writes, opened in headless
Chromium with the view a reader first opens (the model's source file; for the
gated model also its graph breaks).

Usage: ``python tools/report_screenshots.py GPT2_PAGE GATED_PAGE`` (``make
report-screenshots`` writes the pages and runs it).
"""
from __future__ import annotations

import argparse
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars")
#: (page argument, output, the <details> to open: CSS selectors, the window size)
SHOTS = (
    ("gpt2", "report_gpt2.png", ["details.file:first-of-type"], "1400,1500"),
    ("gated", "report_gated.png", ["details.file:first-of-type"], "1400,1700"),
)


def shoot(page: pathlib.Path, out: pathlib.Path, opened: list[str], size: str) -> None:
    script = "".join(f"document.querySelectorAll({sel!r}).forEach(function (d) {{ d.open = true; }});"
                     for sel in opened)
    with tempfile.TemporaryDirectory() as tmp:
        shown = pathlib.Path(tmp) / page.name
        shown.write_text(page.read_text(encoding="utf-8").replace("</body>", f"<script>{script}</script></body>"),
                         encoding="utf-8")
        subprocess.run([shutil.which("chromium"), *FLAGS, f"--user-data-dir={tmp}/profile", f"--window-size={size}",
                        f"--screenshot={out}", f"file://{shown}"], check=True, capture_output=True, timeout=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gpt2", type=pathlib.Path)
    parser.add_argument("gated", type=pathlib.Path)
    args = parser.parse_args(argv)
    for key, name, opened, size in SHOTS:
        out = ROOT / "docs" / name
        shoot(getattr(args, key).resolve(), out, opened, size)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
