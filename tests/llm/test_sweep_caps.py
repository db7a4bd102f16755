"""Sweep-wide LLM limits (bird.llm.sweep): one ledger for every cell of a sweep, request slots per machine, a launcher
whose cells cannot share the sweep directory refused before any cell runs."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bird.llm.sweep import SweepLedger

from .fake_servers import FakeLLMServer
from .test_search_e2e import PROGRAM

ROOT = Path(__file__).resolve().parents[2]


def _admit_many(folder: str, n: int, out: multiprocessing.Queue) -> None:
    ledger = SweepLedger(Path(folder))
    out.put(sum(not ledger.admit() for _ in range(n)))


def test_ledger_admits_exactly_the_cap_across_processes(tmp_path):
    SweepLedger(tmp_path).set_caps(37, None)
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    procs = [ctx.Process(target=_admit_many, args=(str(tmp_path), 20, out)) for _ in range(4)]
    for p in procs:
        p.start()
    admitted = sum(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join()
    ledger = SweepLedger(tmp_path).read()
    assert admitted == 37 and (ledger["calls"], ledger["refused"]) == (37, 80 - 37)


def test_ledger_keeps_what_an_earlier_run_spent_when_the_cap_is_raised(tmp_path):
    from bird.llm.base import Response

    ledger = SweepLedger(tmp_path)
    ledger.set_caps(None, 0.5)
    assert ledger.admit() == ""
    ledger.spent(Response("x", "m", 100, 10, cost_usd=0.75))
    assert "budget.sweep_max_cost_usd=0.5 reached" in ledger.admit()
    assert ledger.set_caps(None, 1.0)["cost_usd"] == 0.75  # a re-run of the sweep with a higher cap
    assert ledger.admit() == ""


def _bird(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    return subprocess.run([sys.executable, "-m", "bird", *args], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=900)


@pytest.mark.slow
def test_a_joblib_sweep_stops_at_the_sweep_call_cap_across_cells_and_every_cell_finishes(tmp_path):
    """4 cells x 2 generation calls = 8 without a cap; budget.sweep_max_llm_calls=5 lets exactly 5 reach the server,
    one at a time (llm.sweep_max_concurrency=1), and every cell writes its whole result."""
    pytest.importorskip("openai")
    sweep = tmp_path / "sweep"
    with FakeLLMServer("openai", PROGRAM.format(w=0.001, a=0.5), delay_s=0.2) as srv:
        proc = _bird("-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={sweep}",
                     "seed=0,1,2,3", "llm=openai", f"llm.base_url={srv.base_url}", "llm.model=any",
                     f"llm.cache_dir={tmp_path / 'cache'}", "budget=smoke", "budget.max_iterations=1",
                     "budget.env_steps=1024", "final.retrain=false", "run.progress=false", "video.record=none",
                     "budget.sweep_max_llm_calls=5", "llm.sweep_max_concurrency=1", cwd=tmp_path)
        n_requests, in_flight = len(srv.requests), srv.max_in_flight
    results = [json.loads(p.read_text()) for p in sorted(sweep.glob("*/*/*/seed*/result.json"))]
    assert len(results) == 4, proc.stderr[-3000:]  # every cell finished, none half-written
    assert n_requests == 5 and in_flight == 1
    states = sorted(json.loads(p.read_text())["state"] for p in sweep.glob("*/*/*/seed*/status.json"))
    assert states == sorted(r["status"] for r in results) and set(states) == {"completed", "budget_exhausted"}
    assert proc.returncode == 1  # cells the cap cut are not done: the sweep says so, after running every cell
    assert sum(r["llm_calls"] for r in results) == 5 and sum(r["llm_refused_calls"] for r in results) == 3
    stopped = [r for r in results if r["llm_refused_calls"]]
    assert stopped and all("budget.sweep_max_llm_calls=5 reached" in r["stop_reason"] for r in stopped)
    assert all(r["status"] == "budget_exhausted" for r in stopped)
    ledger = json.loads((sweep / "llm_ledger.json").read_text())
    assert (ledger["calls"], ledger["refused"], ledger["max_llm_calls"]) == (5, 3, 5)


def test_a_launcher_whose_cells_cannot_share_the_ledger_is_refused_with_each_cells_share(tmp_path):
    proc = _bird("-m", "hydra/launcher=ray_cluster", f"hydra.sweep.dir={tmp_path / 'sweep'}", "seed=0,1,2,3",
                 "budget=smoke", "budget.sweep_max_llm_calls=10", "budget.sweep_max_cost_usd=2", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "RayLauncher does not promise one" in proc.stderr
    assert "each of the 4 cells its share up front instead: budget.max_llm_calls=2 budget.max_cost_usd=0.5" in proc.stderr
    assert not list(tmp_path.glob("sweep/**/status.json"))  # no cell started


def test_sweep_limits_outside_a_multirun_are_a_config_error(tmp_path):
    proc = _bird("budget=smoke", "budget.sweep_max_llm_calls=3", f"hydra.run.dir={tmp_path / 'run'}", cwd=tmp_path)
    assert proc.returncode == 2 and "hold across the cells of a sweep (python -m bird -m ...)" in proc.stderr
    assert not (tmp_path / "run" / "status.json").exists()
