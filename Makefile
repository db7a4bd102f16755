# Two set-up commands: `make run` (default search) and `make test` (test suite).
# Each creates .venv and installs what is missing; torch is pinned first so pip takes the CPU build on disk.
# `make test` also installs the system packages its tests need when they are missing (tools/system_deps.sh, as root).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.bird-installed

.PHONY: run test lint bench mutate clean-venv

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[llm,dev,track,study,cluster]"
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m bird $(ARGS)

test: $(STAMP)
	bash tools/system_deps.sh
	$(PY) -m pytest -q $(ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .

bench: $(STAMP)
	$(PY) bench/bench_overhead.py

# mutation testing of the core modules (hours on 2 cores; not part of CI): docs/testing.md
mutate: $(STAMP)
	$(PY) tools/mutate.py $(ARGS)

clean-venv:
	rm -rf $(VENV)
