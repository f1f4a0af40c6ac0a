"""Headless Chromium for the report tests: open a page, dump its DOM or take a
screenshot, and measure it from a script run in the page.

Debian's chromium. CI must have it (.ci/run installs it; missing there is a
failure); on a developer machine without it the browser tests skip with the
install hint, since installing needs root and apt, which `make test` does not
assume."""
from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars")


def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:  # CI (.ci/run installs chromium and sets BYTEGRAPH_REQUIRE_BROWSER) never skips
        if os.environ.get("CI") == "true" or os.environ.get("BYTEGRAPH_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is missing under CI (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install chromium); the page tests need a browser")
    return path


def browse(page: str | os.PathLike, profile: Path, *action: str, size: str = "1400,2000") -> tuple[str, list[str]]:
    """Open ``page`` headless with ``action`` (``--screenshot=...``, ``--dump-dom``);
    return (stdout, the console messages chromium logged). ``profile`` is a
    fresh directory for the browser's user data."""
    done = subprocess.run(
        [chromium(), *FLAGS, f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
         f"--window-size={size}", "--virtual-time-budget=5000", *action, f"file://{page}"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, [line for line in done.stderr.splitlines() if "CONSOLE" in line]


def measure(page: Path, profile: Path, script: str, *action: str, size: str = "1400,2000") -> tuple[str, list[str]]:
    """Run ``script`` at the end of ``page`` (after the page's own); what it
    writes into ``document.title`` comes back, with the console messages.
    ``action``: more of chromium's (``--screenshot=...``: the page after the script)."""
    probe = page.with_name(page.stem + ".probe.html")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", f"<script>{script}</script></body>"),
                     encoding="utf-8")
    dom, console = browse(probe, profile, "--dump-dom", *action, size=size)
    found = re.search(r"<title>(.*?)</title>", dom, re.S)
    return (html.unescape(found.group(1)) if found else ""), console
