"""train.executor=ray: results in job order, progress to the display, a killed worker becomes train_error."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("ray")

from bird.executors import make_executor  # noqa: E402
from bird.learners.job import make_job  # noqa: E402
from bird.loop import search  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TASK_TITLE = b"ray::_train_stream"  # Ray names a worker process after the task it is running


def _training_workers() -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if Path(f"/proc/{entry}/cmdline").read_bytes().startswith(TASK_TITLE):
                    pids.append(int(entry))
            except OSError:
                continue
    return pids


def test_results_come_back_in_job_order_with_progress(ray_address, compose_cfg, tmp_path):
    cfg = compose_cfg("env=mujoco/inverted_pendulum", "train.executor=ray")
    messages: list[tuple] = []
    executor = make_executor(cfg, 2, lambda *msg: messages.append(msg))
    assert not executor.started  # attached to the session's Ray: close() leaves it running
    # the first job is four times longer, so it finishes last; its result must still come first
    jobs = [make_job(cfg, "long", None, 0, 2048, tmp_path / "long"), make_job(cfg, "short", None, 1, 512, tmp_path / "short")]
    results = executor.run("sb3_ppo", jobs)
    executor.close()
    assert [r.candidate_id for r in results] == ["long", "short"]
    assert [r.env_steps for r in results] == [2048, 512] and all(r.ok for r in results)
    assert {m[0] for m in messages} == {"long", "short"}
    assert [m[1:3] for m in messages if m[0] == "long"][-1] == (2048, 2048)


def test_an_error_raised_in_the_task_is_a_train_error_with_its_message(ray_address, compose_cfg, tmp_path):
    cfg = compose_cfg("env=mujoco/inverted_pendulum", "train.executor=ray")
    executor = make_executor(cfg, 1)
    [result] = executor.run("no_such_learner", [make_job(cfg, "c0", None, 0, 1024, tmp_path)])
    assert result.failure is not None and result.failure.kind == "train_error"
    assert result.failure.reason.startswith("ValueError: unknown learner 'no_such_learner'")


@pytest.mark.slow
def test_a_killed_training_worker_is_recorded_and_the_search_finishes(ray_address, compose_cfg, tmp_path):
    cfg = compose_cfg("env=mujoco/inverted_pendulum", "train.executor=ray", "budget.max_iterations=1",
                      "budget.env_steps=8192", "budget.n_checkpoints=4")
    killed: list[int] = []

    def kill_first_training() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            pids = _training_workers()
            if pids:
                time.sleep(1.0)  # mid-run, not at start-up
                if pids[0] in _training_workers():
                    os.kill(pids[0], signal.SIGKILL)
                    killed.append(pids[0])
                    return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_first_training, daemon=True)
    killer.start()
    result = search(cfg, tmp_path)
    killer.join(timeout=5)
    assert killed, "no Ray training worker was seen"
    records = [json.loads((tmp_path / "candidates" / c / "candidate.json").read_text()) for c in ("it1-c0", "it1-c1")]
    failed = [r for r in records if r["failure"]]
    assert len(failed) == 1 and failed[0]["failure"]["kind"] == "train_error"
    assert "Ray training worker lost (WorkerCrashedError)" in failed[0]["failure"]["reason"]
    survivor = next(r for r in records if not r["failure"])
    assert result["returned"]["candidate_id"] == survivor["id"] and math.isfinite(result["returned_score"])
    assert result["failures"] == {"train_error": 1}


@pytest.mark.slow
def test_smoke_search_cli_on_ray_attached_by_address(ray_address, tmp_path):
    run = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "bird", "budget=smoke", "env=mujoco/hopper", "train.executor=ray",
                           f"ray.address={ray_address}", "video.record=none", f"hydra.run.dir={run}"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((run / "result.json").read_text())
    assert math.isfinite(result["returned_score"]) and not result["failures"]
    assert "[it 1/2]" in proc.stderr and "2,048/2,048 steps" in proc.stderr  # progress from the Ray tasks
    assert "Started a local Ray instance" not in proc.stderr  # it attached instead


@pytest.mark.slow
def test_a_search_on_ray_gives_the_local_pools_result_bit_for_bit(ray_address, method_smoke_run, method_smoke_config,
                                                                  tmp_path):
    from bird.bundle.compare import compare_runs, read_run

    local, expected = method_smoke_run("eureka")  # the shared smoke search (local pool)
    cfg = method_smoke_config("eureka")
    cfg.train.executor, cfg.ray.address = "ray", ray_address  # execution-only: the config hash stays
    result = search(cfg, tmp_path / "ray")
    assert result["config_hash"] == expected["config_hash"]
    comparison = compare_runs(read_run(local), read_run(tmp_path / "ray"))
    assert comparison.identical, [str(d) for d in comparison.differences][:10]


def test_the_jax_trainer_walls_itself_inside_a_ray_task(ray_address):
    """train.learner=jax_ppo on Ray: the Ray task is the trainer's host, as a local pool's worker is; the trainer it
    starts there applies every layer, its deferred uid drop included (the training itself: tests/jaxpath)."""
    import ray

    from bird.reward.trainer_wall import explain_trainer

    layers = ray.get(ray.remote(explain_trainer).options(num_cpus=1, max_retries=0).remote())
    assert {d["name"] for d in layers} >= {"landlock", "seccomp", "network_namespace", "unprivileged_user"}
    assert [d for d in layers if not d["active"]] == []
