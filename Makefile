# The two set-up commands of the README. Both create (or reuse) .venv.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo report-screenshots bench-report test test-all venv bench bench-baseline bench-quick bench-inductor bench-trace fuzz opinfo soak

$(STAMP): requirements-dev.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements-dev.txt
	$(BIN)/pip install --quiet --no-deps -e .
	touch $(STAMP)

venv: $(STAMP)

# The bench and frameworks extras (pyproject.toml) on top of the dev set-up; constrained
# to the dev pins so they never replace torch.
BENCH_STAMP := $(VENV)/.bench-installed
$(BENCH_STAMP): $(STAMP) pyproject.toml
	$(BIN)/pip install --quiet -c requirements-dev.txt -e '.[bench,frameworks]'
	touch $(BENCH_STAMP)

# The main job: real models (torch's TransformerEncoder, HF GPT-2) through `bytegraph run`;
# the GPT-2 run also writes the HTML compile report (needs the report extra: jinja2, pygments).
demo: $(STAMP)
	$(BIN)/bytegraph run examples/transformer_encoder.py
	$(BIN)/bytegraph run --report report.html examples/gpt2.py
	$(BIN)/bytegraph run --report report_gated.html examples/gated_mlp.py
	@echo "GPT-2 compile report: file://$(CURDIR)/report.html (open it in a browser)"
	@echo "gated model's compile report: file://$(CURDIR)/report_gated.html"

# The README's screenshots of the two demo pages (docs/report_gpt2.png, docs/report_gated.png; needs chromium).
report-screenshots: demo
	$(BIN)/python tools/report_screenshots.py report.html report_gated.html

# The quick test tier (slow model tests are excluded by default).
test: $(STAMP)
	$(BIN)/python -m pytest -q

# Everything, including slow model-scale tests.
test-all: $(BENCH_STAMP)
	$(BIN)/python -m pytest -q -m ""

# bytegraph vs torch.compile on the whole model zoo (backend eager; 104 worker processes: measured
# 118 min at load 11-20 with --jobs 2-4, estimated 30-40 min on an idle 2-core machine); rewrites README.md's benchmark block,
# benchmarks/results/readme/ and torch.compile's recorded
# graph counts (benchmarks/models/torch_compile_baseline.json, read by the slow test tier).
BASELINE := benchmarks/models/torch_compile_baseline.json
bench: $(BENCH_STAMP)
	$(BIN)/python -m benchmarks.compare --readme --baseline $(BASELINE)

# torch.compile alone on the whole zoo (about half of `make bench`): rewrites only the recorded
# graph counts; run it after changing torch or a zoo model.
bench-baseline: $(BENCH_STAMP)
	$(BIN)/python -m benchmarks.compare --frontends torch.compile --out benchmarks/results/baseline \
		--repeat 1 --baseline $(BASELINE)

# Time to first output with inductor, cold and warm process, both frontends (one fresh process per
# run, one compile-cache folder per model and frontend): the issue-19 table plus corpus models that
# inductor compiles in reasonable time on 2 cores (about 20 min); prints a table and rewrites README.md's
# inductor block and its chart (benchmarks/results/readme/first_output.png).
bench-inductor: $(BENCH_STAMP)
	$(BIN)/python -m benchmarks.first_output --programs transformer_encoder mlp_train mlp resnet gpt2 \
		--json benchmarks/results/first_output.json --readme

# The compile report's page for GPT-2 (2 and 12 layers) and the gated example: size, height, time to
# open in Chromium (needs chromium; about 1 min).
bench-report: $(BENCH_STAMP)
	$(BIN)/python -m benchmarks.report_page

# The trace-time budget: first-call CPU time of every installed corpus model, this tree against
# the pinned reference commit (benchmarks/trace.py: REFERENCE) and torch.compile, alternated fresh
# processes, medians; MODELS=a,b picks models, PROFILE=model profiles one instead.
bench-trace: $(BENCH_STAMP)
	$(BIN)/python -m benchmarks.trace $(if $(MODELS),--models $(MODELS)) $(if $(PROFILE),--profile $(PROFILE))

# The quick subset (about 1-2 min); results in benchmarks/results/ only.
bench-quick: $(BENCH_STAMP)
	$(BIN)/python -m benchmarks.compare --quick

# Differential fuzzing against eager: N generated programs of every family (tools/fuzz/families),
# each on eager and aot_eager, every tenth also on inductor, on 2 worker processes; resumable (the
# campaign log is fuzz-failures/campaign.jsonl: run it again to continue), each failure minimised
# into fuzz-failures/, a table by program kind at the end. Measured: about 0.25 s of CPU a program and
# backend (eager, aot_eager: nearly all of it bytegraph's trace and the backend), an inductor run 45-110 s
# of wall time on a loaded machine; see docs/fuzzing.md.
N ?= 2000
WORKERS ?= 2
fuzz: $(STAMP)
	$(BIN)/python -m tools.fuzz --n $(N) --workers $(WORKERS) --inductor-every 10

# The OpInfo sweep (tools/opinfo): every OpInfo of torch's op_db compiled with fullgraph=True on
# backends eager and aot_eager, first under torch.compile, then under bytegraph (each in processes of
# its own, JOBS at a time); rewrites tools/opinfo/results/*.json and docs/opinfo.md. Measured: 214 s of CPU
# for bytegraph and 312 s for torch.compile (about 9 min on 2 idle cores with JOBS=1; 50 and 67 min of
# wall time on this shared machine at load averages between 12 and 21).
JOBS ?= 1
opinfo: $(STAMP)
	$(BIN)/python -m tools.opinfo --frontend torch --jobs $(JOBS)
	$(BIN)/python -m tools.opinfo --frontend bytegraph --jobs $(JOBS) --docs

# Soak and load (tools/soak.py): 10,000 functions compiled and dropped, a recompile storm of 10,000
# calls, 8 threads x 1,000 calls, a 5,000-step training loop, fork with DataLoader workers; prints
# each scenario's memory figures (about 20 min on 2 cores; SCALE=0.1 for a tenth of each).
SCALE ?= 1
soak: $(STAMP)
	$(BIN)/python -m tools.soak --scale $(SCALE)

# The same quick tier on CPython 3.12 and 3.13, each in its own venv (pyenv's
# interpreters by default; override PYTHON312/PYTHON313). torch 2.13.0 for these
# versions is the PyPI build, which pulls the CUDA libraries (about 4.7 GB a venv).
PYENV_ROOT ?= $(shell pyenv root 2>/dev/null || echo $(HOME)/.pyenv)
PYTHON312 ?= $(or $(lastword $(sort $(wildcard $(PYENV_ROOT)/versions/3.12.*/bin/python3.12))),python3.12)
PYTHON313 ?= $(or $(lastword $(sort $(wildcard $(PYENV_ROOT)/versions/3.13.*/bin/python3.13))),python3.13)

# .venv312, .venv313: the dev set-up on $(PYTHON312), $(PYTHON313). (Pattern rules:
# test-py312, test-all-py312, demo-py312 and their 3.13 twins are not .PHONY, which would disable them.)
# The stamps are kept: make would otherwise delete them as intermediate files after each run.
.PRECIOUS: .venv3%/.installed .venv3%/.bench-installed

.venv3%/.installed: requirements-dev.txt pyproject.toml
	test -x .venv3$*/bin/python || $(PYTHON3$*) -m venv .venv3$*
	.venv3$*/bin/pip install --quiet -r requirements-dev.txt
	.venv3$*/bin/pip install --quiet --no-deps -e .
	touch $@

test-py3%: .venv3%/.installed
	.venv3$*/bin/python -m pytest -q

demo-py3%: .venv3%/.installed
	.venv3$*/bin/bytegraph run examples/transformer_encoder.py
	.venv3$*/bin/bytegraph run --report report-py3$*.html examples/gpt2.py

.venv3%/.bench-installed: .venv3%/.installed pyproject.toml
	.venv3$*/bin/pip install --quiet -c requirements-dev.txt -e '.[bench,frameworks]'
	touch $@

test-all-py3%: .venv3%/.bench-installed
	.venv3$*/bin/python -m pytest -q -m ""
