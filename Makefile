# SSD profiling toolkit. `make` (= `make report`) runs §1 and every section, then the report.
# Settings come from the environment or the command line: make report PROFILE=quick TARGET=...
# (flags of the scripts override them; see `bash qd1_test.bash --help`).

SHELL := /bin/bash
.DEFAULT_GOAL := report
PYTHON := .venv/bin/python
# The sections in report order, from lib/sections.tsv (its data lines start with the number):
# id:script:alias, e.g. qd_sweep:qd_sweep_test.bash:qd. The id is results/<id> and
# `python -m analysis <id>`; `make <id>` and `make <alias>` run the script.
SECTION_ROWS := $(shell awk -F'\t' '$$1 ~ /^[0-9]+$$/ {print $$2 ":" $$3 ":" $$4}' lib/sections.tsv)
section_field = $(word $(2),$(subst :, ,$(1)))
SECTION_IDS := $(foreach row,$(SECTION_ROWS),$(call section_field,$(row),1))
SECTION_SCRIPTS := $(foreach row,$(SECTION_ROWS),$(call section_field,$(row),2))
SECTION_ALIASES := $(filter-out $(SECTION_IDS),$(foreach row,$(SECTION_ROWS),$(call section_field,$(row),3)))
SHELL_FILES := env.bash report.bash serve.bash $(SECTION_SCRIPTS) lib/*.bash .ci/run \
	tests/fixtures/make-results.bash bench/overhead bench/lib/overhead.bash bench/model-drive \
	bench/analysis bench/fidelity bench/statistics tools/nvme_vm/setup.bash

.PHONY: report env compare history $(SECTION_IDS) $(SECTION_ALIASES) analysis sample-report \
	demo test test-fast test-long lint docs clean help install install-tests install-nvme-vm

# The set-up is part of every target: the first use on a fresh clone installs what the target
# needs (lib/packages.tsv's packages, .venv from requirements.txt), a later one only checks (a
# fraction of a second). The scripts do the same for themselves (ensure_installed in
# lib/common.bash), so report and the sections need no prerequisite here.
INSTALL := bash env.bash --install-only
install:
	@$(INSTALL)
install-tests:
	@$(INSTALL) --for-tests
install-nvme-vm:
	@$(INSTALL) --nvme-vm

help:
	@echo "make report    §1 env, every section, then out/report.md and .html (default target)"
	@echo "               RESULTS=results/drive-a keeps this drive's results and report apart"
	@echo "               TARGETS=examples/targets.yaml judges a lab's targets: out/targets.md,"
	@echo "               out/junit.xml for CI, exit 4 when one fails (docs/targets.md)"
	@echo "make env       install dependencies, capture out/env.txt and results/env.json (every"
	@echo "               target installs what it needs first: lib/packages.tsv, requirements.txt)"
	@awk -F'\t' '$$1 ~ /^[0-9]+$$/ {printf "make %-9s §%s %s\n", $$4, $$1, $$7}' lib/sections.tsv
	@echo "               HOSTS=lab.hosts runs a section on every host of a fleet (serve.bash on each)"
	@echo "make compare A=results-a B=results-b [FAIL_IF_WORSE=PCT] [BETWEEN_RUN=PCT]   B against A:"
	@echo "               ratios, Welch's t-test with the spread between runs (BETWEEN_RUN: a lab's figure)"
	@echo "make history [DEVICE=SERIAL] [SINCE=YYYY-MM-DD]   every drive's headlines over its runs,"
	@echo "               step changes found: out/history.md (HISTORY=file or postgresql://...)"
	@echo "make analysis  redraw all tables, figures and snippets from results/ (no device I/O);"
	@echo "               TARGETS=FILE judges the lab's targets again first"
	@echo "make demo      the quick report on an emulated NVMe drive in a VM (no spare drive needed;"
	@echo "               installs the VM first, as root): out/demo/report.md"
	@echo "make sample-report   regenerate docs/sample/ (the demo's quick report, into results/sample)"
	@echo "make test      installs what the tests use (the NVMe VM and chromium too), then shellcheck,"
	@echo "               ruff and the test suite (needs root for loop devices)"
	@echo "make test-fast the unit tests only (no script runs, no devices): about 80 s"
	@echo "make test-long the long known answers make test leaves out (--profile pts): about 12 min"
	@echo "make docs      regenerate docs/options.md from lib/options.tsv"
	@echo "make lint      shellcheck and ruff only"
	@echo "make clean     remove tables/, figs/, out/ and tmp/ (results/ is kept)"

# §1 and every section, each even when an earlier one failed, then out/report.md and .html;
# fails at the end if any section did. RESULTS=results/drive-a keeps a drive's run apart.
# TARGETS=FILE judges a lab's targets at the end (out/targets.md, out/junit.xml; exit 4 when one
# fails): report.bash reads it from the environment, as it does every setting.
report:
	bash report.bash

env:
	bash env.bash

$(SECTION_IDS):
	bash $(call section_field,$(filter $@:%,$(SECTION_ROWS)),2)

# The short names: bs runs bs_sweep, and so on.
$(foreach row,$(SECTION_ROWS),$(if $(filter $(SECTION_ALIASES),$(call section_field,$(row),3)),\
	$(eval $(call section_field,$(row),3): $(call section_field,$(row),1))))

# Two results trees (folders like results/), B against A; FAIL_IF_WORSE=PCT gates a lab's CI.
compare: install
	$(PYTHON) -m analysis compare $(A) $(B) $(if $(FAIL_IF_WORSE),--fail-if-worse $(FAIL_IF_WORSE)) \
		$(if $(BETWEEN_RUN),--between-run $(BETWEEN_RUN))

# The run history (make report records every run): out/history.md and figs/history_*.png.
history: install
	$(PYTHON) -m analysis history $(if $(DEVICE),--device "$(DEVICE)") $(if $(SINCE),--since "$(SINCE)")

# Every section present in the results tree, each fleet host's (hosts/<host>/<section>) and the
# hosts side by side, then the report: one Python process (`python -m analysis all`), which
# imports pandas and matplotlib once. A section with a point left without a good repetition exits
# 1 saying how to rerun only what is missing; the other sections and the report are still drawn,
# and make fails at the end.
# TARGETS=FILE judges the lab's targets again first (the analysis may have changed since the run):
# the Targets table is the new verdicts', and make exits non-zero when one fails (after the redraw).
# Without it the last judgment's table is kept as it was.
analysis: install
ifeq ($(TARGETS),)
	$(PYTHON) -m analysis all
else
	rc=0; $(PYTHON) -m analysis targets "$${RESULTS:-results}" "$(TARGETS)" \
	    --unresolved "$${TARGETS_UNRESOLVED:-fail}" || rc=$$?; \
	$(PYTHON) -m analysis all && exit $$rc
endif

# The quick report on an emulated NVMe drive with a write cache that fills: QEMU's NVMe controller
# in a small VM (tools/nvme_vm/demo.py, docs/nvme-vm.md), so every section, §1's NVMe identity and
# §6's cliff show with no spare drive and nothing at risk. Results in results/demo, the report in
# out/demo/. Needs root; the VM is installed on first use.
demo: install-nvme-vm
	$(PYTHON) -m tools.nvme_vm.demo --results results/demo

# docs/sample/: the demo's quick report on the emulated NVMe drive, run into its own tree
# results/sample (started afresh: it is the sample's, nobody else's). Its results tree is
# committed as docs/sample/results and the report drawn from it with its figures and a line
# saying what it ran on (the git revision is recorded before the run); a test draws it again
# and compares. After a change to the analysis only: python -m analysis.report.sample --render.
# The guest runs each section with a clean environment: no TARGET, HOSTS or section setting of the
# caller's changes the experiment.
sample-report: install-nvme-vm
	rm -rf results/sample tables/sample figs/sample out/sample
	$(PYTHON) -m analysis.report.sample --stamp --results results/sample
	$(PYTHON) -m tools.nvme_vm.demo --results results/sample
	$(PYTHON) -m analysis.report.sample --results results/sample --dest docs/sample

# Six workers, a file each at a time (module-scoped runs stay shared within a file): most tests wait
# on fio's runtime, and four left the CPUs a quarter idle in the suite's second half, where the
# model drives' throttled writes hold workers (769 s of pytest on six, 874 s on four, one after
# the other; tests/README.md). The files go in the order tests/conftest.py gives them (the NVMe VM's first,
# the unit tests beside it). The tests marked `alone` (known answers that a neighbour's load could
# move) run afterwards, one at a time: among the others, each waited for every worker to drain
# first (tests/toolkit.py), and the CPUs stood 60-85% idle for six minutes of the suite.
PYTEST := $(PYTHON) -m pytest -q -n 6 --dist loadfile --no-loadscope-reorder
# The `alone` tests marked `paced` wait on a block-layer throttle and use a few CPU-seconds: they
# run two at a time, nothing else beside them (tests/conftest.py); then the others one at a time.
PYTEST_PACED := $(PYTHON) -m pytest -q -n 2 --dist loadfile
PYTEST_ALONE := $(PYTHON) -m pytest -q -p no:xdist

# The lint (shellcheck -x: 66 CPU-s) runs at nice 19 beside the `paced` tests, whose CPUs stand
# three-quarters idle while their throttles pace them, and ends before them (35 s against their
# 36-38, both tests passing as before). Beside the parallel part, whose CPUs stand busy, even at
# nice 19 it took those CPU-seconds from the tests. Never beside the other `alone` tests; its
# output follows the paced ones'. Each part's junit, with
# each test's CPU seconds, start and worker, is kept in tmp/ (python -m tests.timeline reads it).
# A file the tests leave in the repository (outside its git-ignored folders) fails the run: a
# test's files go under tmp/, or a commit picks them up (a fio run in the repository's root left
# its logs there).
# First one collection, no test run, writes the tests' bytecode (pytest's rewritten test files
# too) whatever PYTHONDONTWRITEBYTECODE says (this CI sets it), as env.bash does for analysis/:
# without it every worker compiled every test file anew (6.2 CPU-s a collection against 2.5). It
# names the files holding `alone` tests, which the `alone` sessions then collect (2.4 s, not 6.4).
test: install-tests
	@mkdir -p tmp
	set -o pipefail; git ls-files --others --exclude-standard 2>/dev/null | sort >tmp/untracked-before; \
	rc=0; env -u PYTHONDONTWRITEBYTECODE $(PYTHON) -m pytest -q -p no:xdist --collect-only \
		-m "alone and not long" tests | sed -n 's/::.*//p' | sort -u >tmp/alone-files || rc=$$?; \
	$(PYTEST) -rs --durations=15 --junitxml=tmp/junit.xml -m "not long and not alone" tests || rc=$$?; \
	nice -n 19 $(MAKE) --no-print-directory lint >tmp/lint.log 2>&1 & lint=$$!; \
	$(PYTEST_PACED) -rs --junitxml=tmp/junit-paced.xml -m "paced and not long" $$(cat tmp/alone-files) || rc=$$?; \
	wait $$lint || rc=$$?; cat tmp/lint.log; \
	$(PYTEST_ALONE) -rs --durations=5 --junitxml=tmp/junit-alone.xml -m "alone and not paced and not long" \
		$$(cat tmp/alone-files) || rc=$$?; \
	git ls-files --others --exclude-standard 2>/dev/null | sort | comm -13 tmp/untracked-before - >tmp/left-behind; \
	if [ -s tmp/left-behind ]; then \
		echo "make test: the tests left these in the repository (a test's files go under tmp/):"; \
		cat tmp/left-behind; rc=1; fi; exit $$rc

# The tests marked `long`: the pts profile's known answers (a GC model drive to steady state, the
# whole profile on the NVMe VM: about 12 minutes), kept out of make test and so out of CI's 20.
test-long: install-tests
	$(PYTEST) -rs --durations=15 -m long tests

# The tests that run no script and touch no device (markers set in tests/conftest.py).
test-fast: install-tests
	$(PYTEST) -m "not e2e and not device and not root" tests

# Generated docs: edit lib/options.tsv, then `make docs` (a test checks the file is current).
docs: install
	$(PYTHON) -m analysis options >docs/options.md.partial && mv docs/options.md.partial docs/options.md

lint: install-tests
	@# one shellcheck per file, on every CPU: each script re-reads the libraries it sources
	printf '%s\n' $(SHELL_FILES) | xargs -P "$$(nproc)" -n 1 shellcheck -x
	$(PYTHON) -m ruff check analysis tests tools bench

clean:
	rm -rf tables/* figs/* out/* tmp/*
	@echo "kept results/ (raw fio output); remove it by hand if you really mean to"
