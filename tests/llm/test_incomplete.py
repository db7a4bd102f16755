"""A cell whose LLM calls failed after every retry is not done: it ends `incomplete` with the count and the last
error, bird.status lists it, the leaderboard leaves it out saying why, and a re-run of the sweep asks the lost calls
again, takes the answers it had from the response cache, and completes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .fake_servers import FakeLLMServer
from .test_search_e2e import _Programs

pytestmark = pytest.mark.slow


def _sweep(srv: FakeLLMServer, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    cmd = [sys.executable, "-m", "bird", "-m", "seed=0", f"hydra.sweep.dir={tmp_path / 'sweep'}", "llm=openai",
           f"llm.base_url={srv.base_url}", "llm.model=any", f"llm.cache_dir={tmp_path / 'cache'}",
           "llm.max_concurrency=1", "llm.max_retries=2", "llm.retry_base_s=0.001", "budget=smoke",
           "budget.env_steps=1024", "final.retrain=false", "run.progress=false", "video.record=none"]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path)


def test_a_cell_that_lost_calls_to_429s_ends_incomplete_and_a_rerun_completes_through_the_cache(tmp_path):
    pytest.importorskip("openai")
    from analysis.rundir import read_runs
    from bird.status import summarise

    # the first call meets 429 on its first attempt and both retries; then the server recovers
    with FakeLLMServer("openai", _Programs(), faults=["429"] * 3) as srv:
        first = _sweep(srv, tmp_path)
        asked_first = len(srv.requests)
        run = next((tmp_path / "sweep").glob("*/*/*/seed0"))
        result = json.loads((run / "result.json").read_text())
        assert first.returncode == 1 and result["status"] == "incomplete", first.stderr[-3000:]
        assert result["llm_failed_calls"] == 1 and result["failures"] == {"llm_error": 1}
        assert "1 LLM call(s) failed after every retry" in result["status_reason"] and "HTTP 429" in result["status_reason"]
        assert json.loads((run / "status.json").read_text())["state"] == "incomplete"
        summary = summarise(tmp_path / "sweep")
        assert (summary["incomplete"], summary["completed"]) == (1, 0)
        assert [r["state"] for r in summary["runs"]] == ["incomplete"]
        skipped = read_runs([tmp_path / "sweep"], warn=False).skipped
        assert len(skipped) == 1 and "state='incomplete' (not completed: 1 LLM call(s) failed" in skipped[0].reason

        second = _sweep(srv, tmp_path)  # the sweep re-run: the cell is not done, so it runs again
        asked_second = len(srv.requests) - asked_first
    again = json.loads((run / "result.json").read_text())
    assert second.returncode == 0 and again["status"] == "completed", second.stderr[-3000:]
    assert again["llm_failed_calls"] == 0 and again["n_failed"] == 0
    assert again["llm_cached_calls"] >= 1  # the answer iteration 1 got is read back, not asked again
    assert asked_second == again["llm_calls"] - again["llm_cached_calls"]
    assert summarise(tmp_path / "sweep")["completed"] == 1
