"""Every script in bench/ runs end to end at a tiny budget, as a user runs it (a subprocess from the repository root),
and prints its figures: a benchmark that breaks fails here, not when someone next wants its number."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(cmd: list[str], timeout: float = 600, env: dict[str, str] | None = None) -> str:
    """stdout of `cmd` run from the repository root; fails the test with its stderr when it exits non-zero."""
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout


def figure(pattern: str, text: str) -> float:
    """The number the regex's group 1 finds in `text` (thousands separators allowed); it must be finite and > 0."""
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in the output:\n{text}"
    value = float(found.group(1).replace(",", ""))
    assert math.isfinite(value) and value > 0, (pattern, value)
    return value


def test_make_bench_runs_the_overhead_bench_through_the_public_learner():
    """`make bench` (the README's overhead figure) at a smoke budget; the Makefile's install step is skipped
    (STAMP=) and the running interpreter used."""
    out = run(["make", "-s", "bench", "STAMP=", f"PY={sys.executable}",
               "ARGS=--steps 256 --n-envs 2 --repeats 1 --sandbox-repeats 1"])
    assert "256 steps trained (--steps 256), n_envs 2" in out
    for side in (r"raw SB3 PPO \(reference reward\)\s+", r"bird training \(sandboxed reward\) "):
        figure(side + r"median\s+([\d.]+) s", out)
        figure(side + r"median.* CPU\s+([\d.]+) s", out)
    figure(r"overhead ratio bird/raw = ([\d.]+) \(wall\)", out)
    figure(r"overhead ratio bird/raw = .*, ([\d.]+) \(CPU\)", out)
    figure(r"worker start-up (\d+) ms", out)
    figure(r"with 4 checkpoint evaluations \(4 episodes each\): ([\d.]+) s", out)


def test_throughput_bench_measures_one_training():
    out = run([sys.executable, "bench/bench_throughput.py", "--env", "mujoco/hopper", "--steps", "256",
               "--repeats", "1"])
    figure(r"mujoco/hopper\s+([\d,]+)\s+[\d,]+", out)


def test_analysis_bench_times_every_stage_on_a_small_synthetic_collection():
    out = run([sys.executable, "bench/bench_analysis.py", "--n-runs", "200"])
    assert "-> 200 runs, 600 iterations" in out
    for stage in ("read_runs", "save_parquet", "DuckDB aggregate", "BCa (B=10^4) for 40 benchmark x method cells",
                  "Bradley–Terry pooled fit (10 methods)", "Bradley–Terry intervals"):
        assert re.search(rf"{re.escape(stage)}.*\s[\d.]+ s$", out, re.M), stage


TINY_SEARCH = ["budget.max_iterations=1", "budget.max_candidates=1", "budget.env_steps=256",
               "budget.final_env_steps=256", "env.horizon=50"]


@pytest.mark.slow
def test_executor_bench_compares_local_and_ray_on_one_search():
    out = run([sys.executable, "bench/bench_executor.py", "--repeats", "1", "--num-cpus", "2",
               "--env", "mujoco/inverted_pendulum", "--set", *TINY_SEARCH])
    figure(r"Ray start-up .*: ([\d.]+) s", out)
    figure(r"ratio ray / local: ([\d.]+)", out)
    assert "same returned candidate and score on both executors: True" in out


@pytest.mark.slow
def test_video_bench_times_a_search_with_and_without_a_clip():
    out = run([sys.executable, "bench/bench_video.py", "--envs", "mujoco/inverted_pendulum", "--repeats", "1",
               "--set", *TINY_SEARCH])
    row = next(line for line in out.splitlines() if line.startswith("| mujoco/inverted_pendulum | smoke |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert all(float(c) > 0 for c in cells[2:5]), row
    assert re.fullmatch(r"\d+ / \d+ / [\d.]+", cells[5]), row  # the clip's steps / frames / render seconds


@pytest.mark.slow
def test_device_script_dry_run_runs_the_jax_bench_and_a_search(tmp_path):
    """bench/device/run.sh --dry-run: bench/bench_jax.py (raw Brax PPO vs bird's jax_ppo) and a jax_ppo search at
    tiny budgets on the CPU, as the GPU machine runs them at full size."""
    out = run(["bash", "bench/device/run.sh", "--dry-run"], timeout=900,
              env={"PYTHON": sys.executable, "OUT": str(tmp_path), "BIRD_DEVICE_BUDGET_S": "840"})
    assert re.search(r"bench: finished after \d+ s", out), out
    assert re.search(r"search: finished after \d+ s", out), out
    result = json.loads((tmp_path / "search" / "result.json").read_text())
    assert math.isfinite(result["returned_score"]) and f"search result: returned_score={result['returned_score']}" in out
    bench = json.loads((tmp_path / "bench_jax.json").read_text())
    assert bench["raw"]["trainings"] == 1 and bench["bird"]["trainings"] == 2
    assert bench["ratio"] > 0 and len(bench["bird"]["final_scores"]) == 2
