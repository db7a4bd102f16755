"""Whole offline searches on Meta-World tasks beyond MT10 (budget=smoke, short episodes): eureka and GRACE on faucet-open
(PRM4RL's task and App. B.1 source), and PRM4RL's generalisation protocol on pick-place (one of the ten tasks of
+sweep=prm4rl_tasks, run end to end; the sweep's ten cells are composed in tests/envs/test_metaworld_config.py)."""

from __future__ import annotations

import json
import math

import pytest

from bird.leaks import audit_run
from bird.loop import search

SHORT = ["env.horizon=100", "budget.env_steps=512", "budget.final_env_steps=512", "verify.call_timeout_s=60"]
SMALL_DEMOS = ["demos.n_expert=2", "demos.n_negative=2", "demos.max_train=2"]


@pytest.mark.slow
@pytest.mark.parametrize("method", ["eureka", "grace"])
def test_a_smoke_search_runs_on_a_task_beyond_mt10(compose_cfg, tmp_path, method):
    cfg = compose_cfg(f"method={method}", "env=metaworld/faucet_open", *SHORT, *SMALL_DEMOS)
    result = search(cfg, tmp_path)
    assert result["env"] == "metaworld/faucet_open" and result["suite"] == "metaworld"
    assert math.isfinite(result["returned_score"]) and 0.0 <= result["returned_score"] <= 1.0  # the success rate
    assert audit_run(tmp_path) == []
    task = json.loads((tmp_path / "task.json").read_text())
    assert "faucet_handle_pos" in [f["name"] for f in task["obs_index"]]


@pytest.mark.slow
def test_the_generalisation_protocol_evaluates_the_returned_policy_on_unseen_tasks(compose_cfg, tmp_path):
    """Train PRM4RL on pick-place, evaluate each final seed's policy on App. B.1's four unseen tasks, one more
    generation per unseen task for its plan and Ψ; the leaderboard's generalisation table renders from the run."""
    from analysis import build_leaderboard
    from analysis.report import write_leaderboard

    run = tmp_path / "run"
    cfg = compose_cfg("+protocol=prm4rl_generalisation", "env=metaworld/pick_place", *SHORT, "transfer.episodes=2")
    result = search(cfg, run)
    record = result["transfer"]
    assert record["source"] == "metaworld/pick_place" and record["episodes"] == 2 and record["seeds"]
    assert list(record["tasks"]) == cfg.transfer.tasks["metaworld/pick_place"]
    evaluated = {t: r for t, r in record["tasks"].items() if r["failure"] is None}
    assert evaluated, record  # the offline generator's program passes PRM4RL's checks on some unseen task
    for task, r in evaluated.items():
        assert all(0.0 <= s <= 1.0 for s in r["scores"]) and r["plan_list"] and r["candidate_id"], task
        folder = run / "transfer" / task.replace("/", "__")
        assert (folder / "candidates" / r["candidate_id"] / "prompt.json").is_file()
        assert audit_run(folder) == []  # the unseen task's prompt shows nothing its task hides
    for task, r in record["tasks"].items():  # a task not evaluated says why
        assert (r["failure"] is None) == (r["mean"] is not None), task
    assert result["llm_calls"] >= 1 + len(record["tasks"])  # the search's call and one per unseen task
    assert any("App. B.1 leaves how they were made unstated" in s for s in result["substitutes"])
    assert json.loads((run / "transfer" / "transfer.json").read_text()) == record
    lb = build_leaderboard(run, n_resamples=200, bt_resamples=50, figures=False)
    md = write_leaderboard(lb, tmp_path / "board").read_text()
    assert "## Generalisation" in md and "metaworld/pick_place (source)" in md
    assert all(t in md.split("## Generalisation", 1)[1] for t in record["tasks"])
