"""bench/bench_executor.py end to end at a tiny budget, attached to this package's Ray (the other bench/ scripts are
tested in tests/bench/test_bench_scripts.py)."""

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_executor_bench_compares_local_and_ray_on_one_search(ray_address, tmp_path):
    proc = subprocess.run([sys.executable, "bench/bench_executor.py", "--repeats", "1", "--num-cpus", "2",
                           "--address", ray_address, "--env", "mujoco/inverted_pendulum", "--set",
                           "budget.max_iterations=1", "budget.max_candidates=1", "budget.env_steps=256",
                           "budget.final_env_steps=256", "env.horizon=50", "video.record=none"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "BIRD_BENCH_RESULTS": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = proc.stdout
    assert f"Ray start-up (attach to {ray_address} + 2 warm-up tasks, excluded below)" in out
    ratio = float(out.split("ratio ray / local: ")[1].split()[0])
    assert ratio > 0
    assert "same returned candidate and score on both executors: True" in out
    with open(tmp_path / "executor.csv", newline="") as fh:
        (row,) = csv.DictReader(fh)  # the dated row bench/record.py appended, out of bench/results/
    assert float(row["ratio"]) == pytest.approx(ratio, abs=1e-3) and row["same_result"] == "True"
