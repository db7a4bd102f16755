"""Sweeps beyond one machine: submitit and Ray launchers run 2-cell sweeps; BIRD's grids as conf/sweep/ configs."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from bird.config.load import CONF_DIR
from bird.sweeps import cells, estimate

ROOT = Path(__file__).resolve().parents[2]
# two one-training cells: what is tested is that the launcher runs each cell's search to completion
TWO_CELLS = ["budget=smoke", "budget.env_steps=1024", "final.retrain=false", "env=mujoco/inverted_pendulum",
             "method=zeroshot", "seed=0,1", "run.progress=false", "video.record=none"]


def _sweep(tmp_path: Path, *launcher: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    sweep = tmp_path / "sweep"
    proc = subprocess.run([sys.executable, "-m", "bird", "-m", *launcher, *TWO_CELLS, f"hydra.sweep.dir={sweep}"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)
    return proc, [json.loads(p.read_text()) for p in sorted(sweep.rglob("result.json"))]


def _assert_two_cells(proc: subprocess.CompletedProcess, results: list[dict]) -> None:
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert sorted(r["seed"] for r in results) == [0, 1]
    assert all(r["method"] == "zeroshot" and math.isfinite(r["returned_score"]) and not r["failures"] for r in results)


@pytest.mark.slow
def test_two_cell_sweep_with_submitit_local(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    _assert_two_cells(*_sweep(tmp_path, "hydra/launcher=submitit_local"))


@pytest.mark.slow
def test_two_cell_sweep_with_the_ray_launcher(ray_address, tmp_path):
    pytest.importorskip("hydra_plugins.hydra_ray_launcher")
    _assert_two_cells(*_sweep(tmp_path, "hydra/launcher=ray_cluster", f"hydra.launcher.ray.init.address={ray_address}",
                              "hydra.launcher.ray.remote.num_cpus=1"))


def test_the_slurm_example_sets_partition_time_and_cores(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    proc = subprocess.run([sys.executable, "-m", "bird", "hydra/launcher=slurm_cluster",
                           "hydra.launcher.partition=gpu-long", "--cfg", "hydra", "--package", "hydra.launcher"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for line in ("_target_: hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher",
                 "partition: gpu-long", "timeout_min: 720", "cpus_per_task: 8"):
        assert line in proc.stdout


@pytest.mark.parametrize(("name", "n_cells", "tasks"), [("bird_gym", 8 * 5 * 10, 5), ("bird_mt10", 8 * 10 * 10, 10)])
def test_bird_grids_cover_methods_tasks_and_ten_seeds_at_the_matched_budget(name, n_cells, tasks):
    grid = cells(name)
    assert len(grid) == n_cells and len({c[1] for c in grid}) == tasks
    assert {c[2] for c in grid} == {f"seed={s}" for s in range(10)}
    text = (CONF_DIR / "sweep" / f"{name}.yaml").read_text()
    assert "override /budget: matched" in text
    for table in ("Table 7", "Table 8", "Table 11"):
        assert table in text
    est = estimate(name)  # composes and validates every (method, task) cell config
    assert est["cells"] == n_cells and est["cpu_h"] > 0


def test_grid_estimate_is_steps_over_throughput():
    # Eureka at budget=matched on one Gym task: 40 trainings and 5 final seeds of 1M steps, plus 20 checkpoints ×
    # 3 evaluation episodes × 1,000 steps for each of those 45 trainings
    est = estimate("bird_gym", ["method=eureka", "env=mujoco/hopper"], {"mujoco": 1000.0})
    assert est["cells"] == 10 and est["env_steps"] == 10 * 45 * 1_060_000
    assert est["cpu_h"] == pytest.approx(10 * 45 * 1_060_000 / 1000 / 3600)
    # RF-Agent's schedule [6, 8, 8, 8, 8]: 38 trainings + 5 final seeds; REvolve: 40 and no final retrain; RDA: 40 with
    # the judge's 3 collected rollouts each, and 3 final seeds
    steps = {m: estimate("bird_gym", [f"method={m}", "env=mujoco/hopper"])["env_steps"] // 10
             for m in ("rf_agent", "revolve", "rda")}
    assert steps == {"rf_agent": 43 * 1_060_000, "revolve": 40 * 1_060_000, "rda": 43 * 1_060_000 + 40 * 3 * 1000}
