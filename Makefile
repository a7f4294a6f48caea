# SSD profiling toolkit. `make` (= `make report`) runs §1 and every section, then the report.
# Settings come from the environment or the command line: make report PROFILE=quick TARGET=...
# (flags of the scripts override them; see `bash qd1_test.bash --help`).

SHELL := /bin/bash
.DEFAULT_GOAL := report
PYTHON := .venv/bin/python
# The sections in report order: results/<name>, `python -m analysis <name>`, <name>_test.bash.
SECTIONS := qd1 bs_sweep mix_rw qd_sweep wss_burst
SHELL_FILES := env.bash report.bash serve.bash $(SECTIONS:%=%_test.bash) lib/*.bash .ci/run \
	bench/overhead

.PHONY: report env qd1 bs mix qd wss compare $(SECTIONS) analysis sample-report test lint clean help

help:
	@echo "make report    §1 env, every section, then out/report.md and .html (default target)"
	@echo "               RESULTS=results/drive-a keeps this drive's results and report apart"
	@echo "make env       install dependencies, capture out/env.txt and results/env.json"
	@echo "make qd1       §2 QD=1 baselines"
	@echo "make bs        §3 block-size sweep"
	@echo "make mix       §4 read/write mix"
	@echo "make qd        §5 queue-depth sweep: knee, Little's Law, tails"
	@echo "make wss       §6 working set, burst -> steady state, compressibility"
	@echo "               HOSTS=lab.hosts runs it on every host of a fleet (serve.bash on each)"
	@echo "make compare A=results-a B=results-b [FAIL_IF_WORSE=PCT]   B against A: ratios, Welch's t-test"
	@echo "make analysis  redraw all tables, figures and snippets from results/ (no device I/O)"
	@echo "make sample-report   regenerate docs/sample/ (a quick report on the default target)"
	@echo "make test      shellcheck, ruff and the test suite (needs root for loop devices)"
	@echo "make lint      shellcheck and ruff only"
	@echo "make clean     remove tables/, figs/, out/ and tmp/ (results/ is kept)"

# §1 and every section, each even when an earlier one failed, then out/report.md and .html;
# fails at the end if any section did. RESULTS=results/drive-a keeps a drive's run apart.
report:
	bash report.bash

env:
	bash env.bash

$(SECTIONS):
	bash $@_test.bash

# Short names for the sweeps.
bs: bs_sweep
mix: mix_rw
qd: qd_sweep
wss: wss_burst

# Two results trees (folders like results/), B against A; FAIL_IF_WORSE=PCT gates a lab's CI.
compare:
	$(PYTHON) -m analysis compare $(A) $(B) $(if $(FAIL_IF_WORSE),--fail-if-worse $(FAIL_IF_WORSE))

# A fleet run's sections are in hosts/<host>/<section>: each host's, then the hosts side by side.
# A section with a point left without a good repetition exits 1 saying how to rerun only what is
# missing; the other sections and the report are still drawn, and make fails at the end.
analysis:
	@r=$${RESULTS:-results}; fail=0; for s in $(SECTIONS); do \
		if [ -d $$r/$$s ]; then $(PYTHON) -m analysis $$s || fail=1; fi; \
		fleet=""; for h in $$r/hosts/*/; do \
			if [ -d $$h$$s ]; then RESULTS=$${h%/} $(PYTHON) -m analysis $$s || fail=1; fleet=1; fi; done; \
		if [ -n "$$fleet" ]; then $(PYTHON) -m analysis hosts $$s || fail=1; fi; done; \
	$(PYTHON) -m analysis report || fail=1; \
	if [ $$fail != 0 ]; then echo "make analysis: a section above is incomplete or failed; its message says what to rerun" >&2; fi; \
	exit $$fail

# docs/sample/: a real quick report on the default target (tmp/target.img), run into its own
# tree results/sample (started afresh: it is the sample's, nobody else's), then copied with the
# figures it links and a line saying what it ran on. A clean environment: no TARGET, HOSTS or
# section setting of the caller's changes the experiment. A few minutes of disk load.
sample-report:
	rm -rf results/sample tables/sample figs/sample out/sample
	env -i PATH="$$PATH" HOME="$$HOME" bash report.bash --profile quick --results results/sample
	$(PYTHON) -m analysis.sample_report --results results/sample --dest docs/sample

test: lint
	$(PYTHON) -m pytest -q tests

lint:
	bash env.bash --install-only
	shellcheck -x $(SHELL_FILES)
	$(PYTHON) -m ruff check analysis tests

clean:
	rm -rf tables/* figs/* out/* tmp/*
	@echo "kept results/ (raw fio output); remove it by hand if you really mean to"
