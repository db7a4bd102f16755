"""`python -m bird.status`: counts from status files and multirun.yaml, without looking at processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bird.status import summarise, sweep_cells

ROOT = Path(__file__).resolve().parents[1]


def _sweep(tmp_path: Path) -> Path:
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    # as Hydra writes it: 2 methods (command line) × 3 seeds (sweeper params) = 6 cells
    (sweep / "multirun.yaml").write_text("hydra:\n  sweeper:\n    params:\n      seed: range(3)\n"
                                         "  overrides:\n    task:\n    - budget=smoke\n    - method=eureka,zeroshot\n")
    cells = {"eureka/seed0": {"state": "completed", "iteration": 5, "iterations": 5, "env_steps": 1000,
                              "llm_calls": 40, "returned_score": 0.25},
             "eureka/seed1": {"state": "running", "iteration": 2, "iterations": 5, "env_steps": 300, "llm_calls": 16},
             "zeroshot/seed0": {"state": "failed", "iteration": 1, "iterations": 1, "env_steps": 7, "llm_calls": 1,
                                "error": "MissingAPIKeyError: set ANTHROPIC_API_KEY"}}
    for sub, status in cells.items():
        (sweep / sub / "candidates" / "it1-c0").mkdir(parents=True)
        (sweep / sub / "status.json").write_text(json.dumps({**status, "updated": "2026-01-01T00:00:00+00:00"}))
    return sweep


def test_counts_cells_by_state_and_sums_progress(tmp_path):
    sweep = _sweep(tmp_path)
    assert sweep_cells(sweep) == 6
    s = summarise(sweep)
    assert (s["cells"], s["completed"], s["running"], s["failed"], s["not_started"]) == (6, 1, 1, 1, 3)
    assert (s["env_steps"], s["llm_calls"]) == (1307, 57)


def test_cli_prints_running_iteration_and_failure_reason(tmp_path):
    sweep = _sweep(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "bird.status", str(sweep)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert ("6 cells · 1 completed · 1 running · 1 failed · 0 incomplete · 0 budget_exhausted · 3 not started"
            in proc.stdout)
    assert "2/5" in proc.stdout and "MissingAPIKeyError: set ANTHROPIC_API_KEY" in proc.stdout
    assert "eureka/seed0" not in proc.stdout  # completed runs only with --all
    missing = subprocess.run([sys.executable, "-m", "bird.status", str(tmp_path / "nope")], capture_output=True,
                             text=True, timeout=120)
    assert missing.returncode == 2 and "not a directory" in missing.stderr
