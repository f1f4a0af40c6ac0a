"""The compile report of real models, opened in headless Chromium: GPT-2 from
the corpus (``make demo``'s page) and a model of the user's own with graph
breaks, recompiles and inlined helpers (``examples/gated_mlp.py``).

Each page is checked as a user reads it: the model's attention and MLP lines
in the source view with the ops they made; the input guards before the
library identity checks; nothing of bytegraph's own (its files, routing
helpers, resume function names, stack slots) outside the generated details;
the size and height budgets (height measured in the browser, every
``<details>`` closed). Each screenshot is written to the test's tmp dir and its
path printed. Quick tier: GPT-2 is the corpus' 2-layer configuration (about
1 s to compile)."""
from __future__ import annotations

import base64
import copy
import gzip
import importlib.util
import inspect
import json
import os
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
import torch

import bytegraph
from benchmarks.models import MODELS, all_close, run_step
from bytegraph.breaks import PACKAGE_DIR
from bytegraph.report import model as report_model
from bytegraph.runtime import metrics
from bytegraph.testing import CompileCounter
from browser import measure
from tests.helpers import check_module

ROOT = Path(__file__).resolve().parent.parent
SIZE_BUDGET = 300_000  # bytes, the GPT-2 demo page
HEIGHT_BUDGET = 6_000  # px, with everything collapsed
#: what only bytegraph's generated code holds: its files, routing helpers, resume functions' own names
GENERATED_WORDS = (os.path.relpath(PACKAGE_DIR, ROOT) + os.sep, "route_callee", "_call_module", "_call_with_forward",
                   "resume_in_", "___stack", "<stack value", "ResumeFunction", "FrameHooks", "__compiled_graph")


def _gated_module():
    spec = importlib.util.spec_from_file_location("gated_mlp", ROOT / "examples" / "gated_mlp.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: the gated model's graphs over its three calls (the second length recompiles with the length dynamic;
#: the loop over the blocks, which breaks in each, resumes in one resume function), and its graph
#: breaks: the gate's branch on a tensor value, the f-string and the print
GATED_GRAPHS, GATED_BREAKS = 15, 7


def _report(tmp: Path, name: str) -> tuple[Path, report_model.Report]:
    page = Path(bytegraph.write_report(tmp / f"{name}.html", title=name))
    return page, report_model.build()


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """GPT-2's and the gated model's pages, their reports and their compile counts."""
    tmp = tmp_path_factory.mktemp("pages")
    out = {}
    with bytegraph.config.patch(raise_on_internal_error=True, raise_on_backend_error=True):
        bytegraph.reset()
        case = MODELS["gpt2"].build()
        eager = copy.deepcopy(case.model)
        counter = CompileCounter()  # not check: the corpus entry's step and tolerances (as test_corpus)
        compiled = bytegraph.compile(case.model, backend=counter)
        assert all_close(run_step(case, compiled, case.inputs), run_step(case, eager, case.inputs), 1e-5, 1e-4)
        out["gpt2"] = (*_report(tmp, "gpt2"), counter.frame_count, list(metrics.FRAMES.values()))
        bytegraph.reset()
        gated = _gated_module()
        torch.manual_seed(0)
        check_module(gated.GatedModel().eval(), calls=[(torch.randint(0, 100, (2, length)),) for length in (8, 12, 16)],
                     graphs=GATED_GRAPHS, breaks=GATED_BREAKS, atol=1e-5, rtol=1e-4)
        out["gated"] = (*_report(tmp, "gated"), GATED_GRAPHS, list(metrics.FRAMES.values()))
        bytegraph.reset()
    return out


def _lines(report: report_model.Report, filename_end: str, function: str) -> dict[str, object]:
    """Stripped source text -> SourceLine, for one function of the source view."""
    [f] = [f for f in report.files if f.filename.endswith(filename_end)]
    [fn] = [fn for fn in f.functions if fn.name == function]
    return {line.text.strip(): line for line in fn.lines if not line.folded}


class _WithoutGenerated(HTMLParser):
    """The markup and text of a page outside its ``gen`` elements and packed blobs."""

    VOID = {"br", "input", "meta", "img", "hr", "link", "col", "wbr"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.skipping = 0
        self.out: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag in self.VOID:
            if not self.skipping:
                self.out.append(self.get_starttag_text())
            return
        attrs = dict(attrs)
        if self.skipping or "gen" in (attrs.get("class") or "").split() or attrs.get("type") == "text/plain":
            self.skipping += 1
            return
        self.out.append(self.get_starttag_text())

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        if self.skipping:
            self.skipping -= 1
        else:
            self.out.append(f"</{tag}>")

    def handle_data(self, data):
        if not self.skipping:
            self.out.append(data)


def _blobs(page: str, generated: bool) -> list[str]:
    """The packed blobs the page's generated details open (or all the others), unpacked."""
    blobs = dict(re.findall(r'<script type="text/plain" id="(blob\d+)">(.*?)</script>', page, re.S))
    gen = set(re.findall(r'<details class="gen lazy" data-blob="(blob\d+)"', page))
    return [gzip.decompress(base64.b64decode(data)).decode() for i, data in blobs.items() if (i in gen) == generated]


def _user_view(page: str) -> str:
    """The page without its generated details, with the other packed blobs unpacked."""
    parser = _WithoutGenerated()
    parser.feed(page)
    return "".join(parser.out) + "\n".join(_blobs(page, generated=False))


def test_gpt2_source_view_has_attention_and_mlp_lines_with_ops(pages):
    page, report, graphs, _ = pages["gpt2"]
    assert graphs == report.graphs == 1 and report.breaks == []  # as torch.compile: one graph
    attention = _lines(report, "modeling_gpt2.py", "GPT2Attention.forward")
    qkv = next(line for text, line in attention.items() if "self.c_attn(hidden_states)" in text)
    mlp = _lines(report, "modeling_gpt2.py", "GPT2MLP.forward")
    fc, act = mlp["hidden_states = self.c_fc(hidden_states)"], mlp["hidden_states = self.act(hidden_states)"]
    layers = 2
    for line in (qkv, fc, act):
        assert line.ops > 0 and line.ops % layers == 0 and [g for g, _ in line.graphs] == [0]
    text = page.read_text()
    for line in (qkv, fc, act):  # each row with its op count, linked to its first node in graph 0
        row = re.search(rf'<tr id="{line.anchor}">.*?</tr>', text, re.S).group(0)
        assert f">{line.ops}</td>" in row and f'href="#{line.graphs[0][1]}"' in row
        assert f'id="{line.graphs[0][1]}"' in text
    # every op of the graph is under a line of the outermost function traced (the decorator wrapping forward)
    assert max(line.ops for f in report.files for fn in f.functions for line in fn.lines) == report.ops


@pytest.mark.parametrize("name", ["gpt2", "gated"])
def test_input_guards_come_before_library_identity_checks(pages, name):
    page, report, _, _ = pages[name]
    text = _user_view(page.read_text())
    for frame in report.frames:
        for c in frame.compiles:
            if c.entry:
                continue
            groups = [g.name for g in c.guard_groups]
            assert groups == sorted(groups, key=["inputs", "parameters and buffers", "module structure",
                                                 "globals and builtins", "global torch state"].index)
            for g in c.guard_groups:
                if g.name == "globals and builtins":  # identity checks: one row per module
                    modules = [what for what, facts in g.lines if "unchanged" in facts]
                    assert len(modules) == len(set(modules))
    inputs, library = text.index("<b>inputs</b>"), text.find("<b>globals and builtins</b>")
    assert inputs < library or library < 0
    if name == "gpt2":
        assert "<code>input_ids</code>: int64 tensor of shape (2, 16)" in text
        assert re.search(r"transformers\.masking_utils</td><td>\d+ objects unchanged: ", text)


@pytest.mark.parametrize("name", ["gpt2", "gated"])
def test_nothing_of_bytegraph_outside_the_generated_details(pages, name):
    page, _, _, _ = pages[name]
    text = page.read_text()
    assert [word for word in GENERATED_WORDS if word in _user_view(text)] == []
    generated = "\n".join(_blobs(text, generated=True))  # where they are: the generated details
    assert "__compiled_graph_0" in generated and "def ___guard" in generated.replace("&#39;", "'") or (
        "___guard" in generated)
    if name == "gated":
        assert "route_callee" in generated and "resume_in_" in generated


@pytest.mark.xfail(sys.version_info >= (3, 13), strict=True,
                   reason="3.13: the ops of an inlined module's forward (MLP.forward) are not attributed to its "
                          "source lines in the report's source view (found at the end of stop 31; 3.11, 3.12 pass)")
def test_gated_model_breaks_recompiles_and_inlined_helpers(pages):
    page, report, graphs, stats = pages["gated"]
    gated = _gated_module()
    assert report.graphs == graphs == sum(len(s.graphs) for s in stats)
    # the program's three graph breaks, each once: the gate's branch on a tensor value, the f-string and the print
    where = {(b.record.gb_type, b.where[1]) for b in report.breaks}
    branch = _line_of(gated.Gate.__call__, "if level > self.limit")
    printed = _line_of(gated.GatedModel.forward, "print(")
    assert where == {("data-dependent branching", branch), ("str of traced value", printed), ("print", printed)}
    # each met by the compiles that reached it: the gate's branch by both blocks' gate frames on every call
    # (the loop over the blocks resumes in one resume function, an entry per block)
    assert {(b.record.gb_type, b.count) for b in report.breaks} == {
        ("data-dependent branching", 10), ("str of traced value", 2), ("print", 3)}
    assert report.recompiles == 12  # the recompiles the second and third sequence lengths cause
    # the inlined helpers' lines with their ops; the calling lines carry them too
    norm = _lines(report, "gated_mlp.py", "rms_norm")
    [body] = [line for text, line in norm.items() if text.startswith("return x * torch.rsqrt")]
    attention = _lines(report, "gated_mlp.py", "Attention.forward")
    sdpa = attention["y = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)"]
    block = _lines(report, "gated_mlp.py", "Block.forward")
    call = block["x = x + self.attn(rms_norm(x, self.norm1))"]
    mlp = _lines(report, "gated_mlp.py", "MLP.forward")["return self.down(nn.functional.gelu(self.up(x)))"]
    assert body.own == body.ops > 0 and sdpa.own > 0 and mlp.ops > mlp.own > 0 and call.ops > call.own
    assert [b.record.gb_type for b in block["x = self.gate(x)"].breaks_inside] == ["data-dependent branching"]
    gate = _lines(report, "gated_mlp.py", "Gate.__call__")
    assert [b.record.gb_type for b in gate["if level > self.limit:"].breaks] == ["data-dependent branching"]
    # frames in the user's terms: the gate's own frame and its resume function, by name and line
    labels = {f.label for f in report.frames}
    assert "Gate.__call__" in labels and f"Gate.__call__, resumed at line {branch + 1}" in labels
    assert "GatedModel.forward" in labels and not any("__call__" in label and "Gated" in label for label in labels)
    text = page.read_text()
    assert text.count('<div class="card" id="brk') == 3  # each break shown once


def _line_of(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


#: what the page reports of itself in a browser (into document.title, as JSON): its height as
#: opened and with every <details> closed; then, as opened again, how many rows a packed guard
#: group lays out once opened; whether following an FX node's link opens the file of its line
_PROBE = """
var out = {opened: document.body.scrollHeight}, all = document.querySelectorAll("details");
var open = Array.prototype.filter.call(all, function (d) { return d.open; });
all.forEach(function (d) { d.open = false; });
out.collapsed = document.body.scrollHeight;
open.forEach(function (d) { d.open = true; });
var link = document.querySelector("table.fx a[href^='#f']");
if (link) {
  var row = document.getElementById(link.getAttribute("href").slice(1)), file = row.closest("details");
  link.click();
  out.link_opens_file = file.open;
  file.open = false;
}
window.scrollTo(0, 0);
var packed = document.querySelector("details.lazy:not(.gen)");
packed.open = true;
setTimeout(function () {
  packed.unpacked.then(function () {
    out.packed_rows = packed.querySelectorAll(".target tr").length;
    packed.open = false;
    document.title = JSON.stringify(out);
  });
});
"""


@pytest.fixture(scope="module")
def browsed(pages, tmp_path_factory):
    """Each page opened once in Chromium: what :data:`_PROBE` found, the console, the screenshot."""
    out = {}
    for name, (page, *_) in pages.items():
        tmp = tmp_path_factory.mktemp(f"browse-{name}")
        shot = tmp / f"{name}.png"
        title, console = measure(page, tmp / "profile", _PROBE, "--screenshot=" + str(shot), size="1400,2000")
        print(f"\n{name}: page {page}, screenshot {shot}")
        out[name] = (json.loads(title), console, shot)
    return out


@pytest.mark.parametrize("name", ["gpt2", "gated"])
def test_page_budgets_hold_in_the_browser(pages, browsed, name):
    page = pages[name][0]
    found, console, shot = browsed[name]
    size = page.stat().st_size
    print(f"\n{name}: {size} bytes, {found['opened']} px as opened, {found['collapsed']} px collapsed; "
          f"screenshot {shot}")
    assert console == []
    assert shot.stat().st_size > 20_000  # a rendered page, not a blank one
    assert size < SIZE_BUDGET and found["opened"] < HEIGHT_BUDGET and found["collapsed"] < HEIGHT_BUDGET


@pytest.mark.parametrize("name", ["gpt2", "gated"])
def test_packed_details_unpack_and_links_open_their_file(pages, browsed, name):
    """Opening a packed guard group lays out its rows (DecompressionStream in the
    page's script); following an FX node's link to its line opens the collapsed file."""
    report = pages[name][1]
    found, console, _ = browsed[name]
    first = next(g for f in report.frames for c in f.compiles for g in c.guard_groups if g.name != "inputs")
    assert console == [] and found["packed_rows"] == len(first.lines) and found["link_opens_file"] is True
