"""Fixtures for the analysis tests.

- `smoke_runs`: four REAL smoke searches recorded from the engine (fixtures/smoke_runs/README.md).
- `synthetic_sweep`, `make_run`: SYNTHETIC runs (tests/analysis/synthetic_runs.py) in the docs/rundir.md layout,
  with made-up scores (no training, no LLM), for edge cases and the figures real smoke runs lack (EPIC).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from synthetic_runs import corrupt, write_run, write_sweep  # noqa: E402

METHODS = {"eureka": 0.6, "card": 0.0, "grace": -0.4}
TASKS = [("mujoco", "hopper"), ("mujoco", "ant"), ("metaworld", "push"), ("metaworld", "reach")]


SMOKE_RUNS = Path(__file__).parent / "fixtures" / "smoke_runs"


@pytest.fixture(scope="session")
def smoke_runs() -> Path:
    """Recorded real smoke runs: eureka and zeroshot on mujoco/inverted_pendulum, seeds 0 and 1."""
    return SMOKE_RUNS


@pytest.fixture(scope="session")
def synthetic_sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SYNTHETIC sweep: 3 methods x 4 tasks (2 benchmarks) x 3 seeds, with EPIC data, plus 3 broken runs."""
    root = tmp_path_factory.mktemp("synthetic_sweep")
    write_sweep(root, METHODS, TASKS, seeds=[0, 1, 2], epic=True)
    for seed, kind in [(7, "running"), (8, "bad_json"), (9, "missing_field")]:
        corrupt(write_run(root, "eureka", "mujoco", "hopper", seed), kind)
    return root


@pytest.fixture()
def make_run(tmp_path: Path):
    """Write one synthetic run under tmp_path: make_run(method, suite, task, seed, **kwargs)."""
    def _make(method: str = "eureka", suite: str = "mujoco", task: str = "hopper", seed: int = 0, **kw):
        return write_run(tmp_path, method, suite, task, seed, **kw)
    return _make
