# The two set-up commands are `make sweep` and `make test`: each creates .venv and installs on first use.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
CONFIG ?= conf/paper.yaml
RUNS ?= runs

.PHONY: install system-packages test test-fast test-long test-under-load sweep bench monitor clean

# torch is pinned to the CPU wheel this machine kind keeps on disk; a bare `torch` requirement
# would pull a multi-GB CUDA build. On a GPU machine, install your torch first.
TORCH ?= torch==2.13.0

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check '$(TORCH)'
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# The Debian packages the tests run (Apertium and its pairs, hspell, Chromium, strace): installed when
# missing (as root, or with sudo), or one message that names them and the command, before any test.
# biaseval/system_packages.py knows the list; it needs only the system's Python.
system-packages:
	@$(PYTHON) -m biaseval.system_packages install test

# Parallel test workers (pytest-xdist; a module's tests stay on one worker: tests/conftest.py). The quick
# tier keeps both cores busy computing; the whole suite waits on Ray, servers and subprocesses often
# enough that a third worker fills the gaps (docs/architecture.md, "Tests and benchmarks").
FAST_WORKERS ?= 2
TEST_WORKERS ?= 3
XDIST = --dist loadfile

# The release check: every test, 200 generated examples per property (CI runs this).
test: system-packages $(STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) $(XDIST)

# The quick tier developers run: everything but the tests marked slow (those that need Ray, a browser or
# a real aligner), with fewer generated inputs (BIASEVAL_TEST_PROFILE=quick: tests/conftest.py).
test-fast: system-packages $(STAMP)
	BIASEVAL_TEST_PROFILE=quick $(BIN)/python -m pytest -q -m "not slow" -n $(FAST_WORKERS) $(XDIST)

# The long tier: the property-based tests with many more generated inputs, drawn afresh each run.
test-long: system-packages $(STAMP)
	BIASEVAL_TEST_PROFILE=long $(BIN)/python -m pytest -q -m property -n $(FAST_WORKERS) $(XDIST)

# The slow tier three times in a row with every core kept busy (tests/under_load.sh): a test that
# holds only on an idle machine fails here.
test-under-load: system-packages $(STAMP)
	PYTHON=$(BIN)/python tests/under_load.sh 3

# The Debian packages the config runs (Apertium pairs, analysers) are installed first when missing (as
# root or with sudo: `biaseval validate --install-system-packages`), or it stops saying which.
sweep: $(STAMP)
	$(BIN)/biaseval validate --config $(CONFIG) --install-system-packages
	@out=$(RUNS)/$$(basename $(CONFIG) .yaml)-$$(date -u +%Y%m%dT%H%M%SZ); \
	start=$$(date +%s%N); \
	$(BIN)/biaseval sweep --config $(CONFIG) --out $$out || exit $$?; \
	ms=$$(( ($$(date +%s%N) - start) / 1000000 )); \
	echo "make sweep: $$((ms / 1000)).$$(printf '%03d' $$((ms % 1000))) s wall clock (Ray start included); reports in $$out/"

MONITOR_CONFIG ?= conf/monitor.yaml

# Drift monitoring (scheduled: see deploy/). Exit status 5 = drift, 6 = a system unavailable.
monitor: $(STAMP)
	$(BIN)/biaseval monitor --config $(MONITOR_CONFIG)

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) .pytest_cache
