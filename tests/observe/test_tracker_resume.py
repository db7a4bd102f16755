"""A search killed after iteration 1 and resumed logs to the same tracker run: one TensorBoard log directory, one W&B
run id (offline), one MLflow run; the candidate step axis goes on where the checkpoint left it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from run_kills import Killed, kill_at

from bird.loop import search

pytestmark = pytest.mark.slow
# 1 candidate × 2 iterations, short trainings, no clips
TINY = ("env=mujoco/inverted_pendulum", "budget.max_candidates=1", "budget.max_iterations=2", "budget.env_steps=512",
        "budget.final_env_steps=512", "env.horizon=100", "video.record=none", "verify.call_timeout_s=60")


def _killed_after_iteration_1_then_resumed(compose_cfg, run: Path, tracker: str) -> dict:
    cfg = compose_cfg(*TINY, f"tracker={tracker}")
    with kill_at(lambda name, fields: name == "iteration_done" and fields.get("iteration") == 1), \
            pytest.raises(Killed):
        search(cfg, run)
    result = search(cfg, run)
    opened = [json.loads(ln) for ln in (run / "events.jsonl").read_text().splitlines()]
    assert [e["continued"] for e in opened if e["event"] == "tracker_opened"] == [False, True]
    assert [r["from_iteration"] for r in result["resumes"]] == [1]
    return result


def test_tensorboard_continues_the_same_log_directory(compose_cfg, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    _killed_after_iteration_1_then_resumed(compose_cfg, tmp_path, "tensorboard")
    assert len(list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))) == 2  # one file per session
    acc = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"scalars": 0})
    acc.Reload()
    assert [e.step for e in acc.Scalars("candidate/fitness")] == [0, 1]  # session 2 goes on at step 1
    assert [e.step for e in acc.Scalars("iteration/best_score")] == [1, 2]


def test_wandb_offline_continues_the_same_run_id(compose_cfg, tmp_path):
    sys.path.insert(0, str(Path(__file__).parent))
    from wandb_log import history, read_records

    _killed_after_iteration_1_then_resumed(compose_cfg, tmp_path, "wandb")
    files = sorted(tmp_path.glob("wandb/offline-run-*/run-*.wandb"))
    assert len(files) == 2 and len({f.name for f in files}) == 1  # two sessions, one run id (wandb sync merges)
    saved = json.loads((tmp_path / "tracker.json").read_text())
    assert files[0].name == f"run-{saved['id']}.wandb"
    steps = [[r["candidate/n"] for r in history(read_records(f)) if "candidate/n" in r] for f in files]
    assert steps == [[0], [1]]


def test_mlflow_continues_the_same_run(compose_cfg, tmp_path):
    from mlflow.tracking import MlflowClient

    result = _killed_after_iteration_1_then_resumed(compose_cfg, tmp_path, "mlflow")
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    client = MlflowClient(tracking_uri=(tmp_path / "mlruns").resolve().as_uri())
    [run] = client.search_runs([client.get_experiment_by_name("bird").experiment_id])
    assert run.info.status == "FINISHED" and run.info.run_id == json.loads((tmp_path / "tracker.json").read_text())["run_id"]
    assert [m.step for m in client.get_metric_history(run.info.run_id, "candidate/fitness")] == [0, 1]
    assert [m.step for m in client.get_metric_history(run.info.run_id, "iteration/best_score")] == [1, 2]
    assert run.data.metrics["summary/returned_score"] == pytest.approx(result["returned_score"])
