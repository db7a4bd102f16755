"""Trackers: logs read back with no network — TensorBoard event files, the MLflow file store, W&B offline files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bird.rundir import RunDir
from bird.tracking import RunTracker, TrackerUnavailable, open_tracker
from bird.tracking.base import Tracker

ROOT = Path(__file__).resolve().parents[2]


def _result(run: Path) -> dict:
    return json.loads((run / "result.json").read_text())


@pytest.mark.slow
def test_tensorboard_event_files_hold_the_search(hopper_run):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(hopper_run / "tensorboard"), size_guidance={"scalars": 0, "tensors": 0})
    acc.Reload()
    result = _result(hopper_run)
    scalars = acc.Tags()["scalars"]
    best = acc.Scalars("iteration/best_score")
    assert [e.step for e in best] == [1, 2]
    assert [e.value for e in best] == pytest.approx([it["best_score"] for it in result["iterations"]], rel=1e-6)
    assert [e.value for e in acc.Scalars("iteration/env_steps")] == [it["env_steps_cum"] for it in result["iterations"]]
    assert len(acc.Scalars("candidate/fitness")) == result["n_candidates"]
    assert acc.Scalars("iteration/llm_calls")[-1].value == result["llm_calls"]
    assert "iteration/cost_usd" in scalars and "candidate/score" in scalars
    assert acc.Scalars("summary/returned_score")[0].value == pytest.approx(result["returned_score"], rel=1e-6)
    code = (hopper_run / result["returned"]["code_path"]).read_text()
    assert (hopper_run / "tensorboard" / "artifacts" / "reward" / "reward.py").read_text() == code
    assert "returned_reward/text_summary" in acc.Tags()["tensors"]
    assert (hopper_run / "tensorboard" / "artifacts" / "video" / "episode0.mp4").is_file()


@pytest.mark.slow
def test_mlflow_file_store_holds_the_search(push_run):
    import os

    from mlflow.tracking import MlflowClient

    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    client = MlflowClient(tracking_uri=(push_run / "mlruns").as_uri())
    [run] = client.search_runs([client.get_experiment_by_name("bird").experiment_id])
    result = _result(push_run)
    assert run.info.status == "FINISHED" and run.data.tags["method"] == "eureka"
    assert run.data.params["env.id"] == "metaworld/push" and run.data.params["tracker.backend"] == "mlflow"
    history = client.get_metric_history(run.info.run_id, "iteration/best_score")
    assert [(m.step, m.value) for m in history] == [(1, pytest.approx(result["iterations"][0]["best_score"]))]
    assert client.get_metric_history(run.info.run_id, "iteration/env_steps")[0].value == result["iterations"][0]["env_steps_cum"]
    assert run.data.metrics["summary/returned_score"] == pytest.approx(result["returned_score"])
    arts = {a.path for folder in ("reward", "videos/0") for a in client.list_artifacts(run.info.run_id, folder)}
    assert arts == {"reward/reward.py", "videos/0/episode0.mp4"}
    local = client.download_artifacts(run.info.run_id, "reward/reward.py")
    assert Path(local).read_text() == (push_run / result["returned"]["code_path"]).read_text()


@pytest.mark.slow
def test_wandb_offline_run_files_hold_the_search(nogl_run):
    sys.path.insert(0, str(Path(__file__).parent))
    from wandb_log import history, read_records, summary

    [path] = list(nogl_run.glob("wandb/offline-run-*/run-*.wandb"))
    records = read_records(path)
    result = _result(nogl_run)
    rows = history(records)
    [it] = [r for r in rows if "iteration/n" in r]
    assert it["iteration/best_score"] == pytest.approx(result["iterations"][0]["best_score"])
    assert it["iteration/llm_calls"] == result["llm_calls"] and it["iteration/env_steps"] == 2048
    assert any("candidate/fitness" in r for r in rows)
    assert summary(records)["returned_score"] == pytest.approx(result["returned_score"])
    artifacts = {r.artifact.type: [m.path for m in r.artifact.manifest.contents]
                 for r in records if r.WhichOneof("record_type") == "artifact"}
    assert artifacts["reward"] == ["reward.py"]
    assert [r.exit.exit_code for r in records if r.WhichOneof("record_type") == "exit"] == [0]


class _Broken(Tracker):
    name = "broken"

    def __init__(self) -> None:
        self.closed = False

    def log_metrics(self, metrics, axis, step):
        raise ConnectionError("tracking server went away")

    def close(self, ok):
        self.closed = True


class _Gen:
    """LLM totals as the generator reports them (this test feeds events by hand, without a search)."""

    def totals(self):
        return {"calls": 3, "cached_calls": 0, "input_tokens": 10, "output_tokens": 20, "cost_usd": 0.5}


def test_a_tracker_failing_mid_run_is_recorded_once_and_the_run_goes_on(tmp_path):
    run = RunDir(tmp_path)
    tracker = _Broken()
    observer = RunTracker(tracker, run, _Gen())
    run.listeners.append(observer.on_event)
    run.event("candidate_trained", id="it1-c0", fitness=0.5, score=0.5, failure=None)
    run.event("iteration_done", iteration=1, best_fitness=0.5, best_score=0.5, env_steps_cum=10)
    observer.finish({"returned_score": 0.5})
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    errors = [e for e in events if e["event"] == "tracker_error"]
    assert len(errors) == 1 and "tracking server went away" in errors[0]["error"]
    assert events[-1]["event"] == "iteration_done"  # later logging skipped, nothing raised
    assert tracker.closed  # but the tracker is still closed


def test_a_missing_tracker_package_fails_before_any_work(compose_cfg, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # as if the [track] extra were not installed
    with pytest.raises(TrackerUnavailable, match=r"pip install -e '\.\[track\]'"):
        open_tracker(compose_cfg("tracker=wandb"), RunDir(tmp_path), _Gen())


def test_unknown_tracker_is_a_config_error(compose_cfg):
    from bird.config.load import ConfigError

    with pytest.raises(ConfigError, match="tracker"):
        compose_cfg("tracker.backend=neptune")


def test_trackers_and_the_web_app_stay_unimported_until_used():
    code = ("import sys, bird.loop, bird.registry as r; r.load_builtin_components(); "
            "print([m for m in ('wandb', 'mlflow', 'tensorboard', 'starlette', 'uvicorn', 'krippendorff') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.stdout.strip() == "[]", out.stderr[-2000:]


class _Recorder(Tracker):
    name = "recorder"

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def log_metrics(self, metrics, axis, step):
        self.calls.append(("metrics", axis, step, metrics))

    def close(self, ok):
        self.calls.append(("close", ok))


def test_events_become_metrics_on_their_own_step_axes_and_a_failed_search_closes_as_failed(tmp_path):
    run = RunDir(tmp_path)
    tracker = _Recorder()
    observer = RunTracker(tracker, run, _Gen())
    run.listeners.append(observer.on_event)
    run.event("candidate_trained", id="it1-c0", fitness=0.25, score=None, failure=None)
    run.event("candidate_trained", id="it1-c1", fitness=None, score=None, failure={"kind": "timeout"})
    run.event("iteration_done", iteration=3, best_fitness=0.25, best_score=0.5, env_steps_cum=4096, n_failed=1)
    run.event("final_retrain", scores=[0.1, 0.2])
    observer.finish(None)  # the search raised
    assert tracker.calls[0] == ("metrics", "candidate", 0, {"candidate/fitness": 0.25, "candidate/failed": 0.0})
    assert tracker.calls[1] == ("metrics", "candidate", 1, {"candidate/failed": 1.0})
    axis, step, it = tracker.calls[2][1:]
    assert (axis, step) == ("iteration", 3) and it["iteration/env_steps"] == 4096 and it["iteration/llm_calls"] == 3
    assert it["iteration/cost_usd"] == 0.5 and it["iteration/output_tokens"] == 20 and it["iteration/n_failed"] == 1
    assert tracker.calls[3:5] == [("metrics", "final", 0, {"final/score": 0.1}), ("metrics", "final", 1, {"final/score": 0.2})]
    assert tracker.calls[-1] == ("close", False)
