# Two set-up commands: `make run` (default search) and `make test` (test suite).
# Each creates .venv and installs what is missing; torch is pinned first so pip takes the CPU build on disk.
# `make test` also installs the system packages its tests need when they are missing (tools/system_deps.sh, as root).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.bird-installed

.PHONY: run test lint docs bench bench-jax mutate catalogue clean-venv

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip uninstall -q -y pygame 2>/dev/null || true  # pygame-ce replaces it (pyproject.toml): never both
	$(PY) -m pip install -q -e ".[llm,dev,track,study,cluster,jax]"
	touch $(STAMP)

run: $(STAMP)
	$(PY) -m bird $(ARGS)

# BIRD_REQUIRE_JAX=1: the JAX path tests (tests/jaxpath) fail instead of skipping when the [jax] extra is missing.
# JOBS pytest-xdist workers, each taking whole test modules (--dist loadscope: a module's fixtures are made once) in
# the order tests/conftest.py gives them; what modules share is made once per session (tests/session_share.py).
# JOBS=0: one process.
JOBS ?= 2
test: $(STAMP)
	bash tools/system_deps.sh
	BIRD_REQUIRE_JAX=1 $(PY) -m pytest -q -n $(JOBS) --dist loadscope --no-loadscope-reorder --durations=25 $(ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .

# the documentation site (mkdocs.yml) into site/; --strict: a broken link or a page outside the nav fails the build
# (tests/docs/test_site.py runs the same build)
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(PY) -m mkdocs build --strict $(ARGS)

# the overhead bench (a dated row in bench/results/overhead.csv); ARGS='--steps 256 --n-envs 2 --repeats 1' is a smoke run (tests/bench)
bench: $(STAMP)
	$(PY) bench/bench_overhead.py $(ARGS)

# mutation testing of the core modules (hours on 2 cores; not part of CI): docs/mutation.md
mutate: $(STAMP)
	$(PY) tools/mutate.py $(ARGS)

# a budget=smoke search on every task of the catalogue (about a minute each on 2 cores; not part of CI), appended to
# bench/results/catalogue_smoke.csv, then docs/tasks.md rewritten from the catalogue and those rows.
# ARGS='tasks=gym/pendulum,mujoco/hopper' runs a subset.
catalogue: $(STAMP)
	$(PY) -m bird.envs smoke $(ARGS)
	$(PY) -m bird.envs list format=markdown > docs/tasks.md

clean-venv:
	rm -rf $(VENV)

bench-jax: $(STAMP)
	$(PY) bench/bench_jax.py $(ARGS)
