"""Fixtures for the analysis tests. The run collections here are SYNTHETIC (tests/analysis/synthetic_runs.py):
they follow docs/rundir.md but no policy was trained and no LLM called. Real smoke-run fixtures come from the
engine's tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from synthetic_runs import corrupt, write_run, write_sweep  # noqa: E402

METHODS = {"eureka": 0.6, "card": 0.0, "grace": -0.4}
TASKS = [("mujoco", "hopper"), ("mujoco", "ant"), ("metaworld", "push"), ("metaworld", "reach")]


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
