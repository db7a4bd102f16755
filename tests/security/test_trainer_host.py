"""The trainer's host against trainers that misbehave on purpose (fake_workers/trainer.py, behind the real trainer
layers): every malformed frame, wrong value, silence or crash becomes the group's recorded failure, never a host
exception, and is blamed on the programs only once they were sent (so the culprit search runs only then). A
well-formed run is read into results and files (the positive control)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from bird.learners import trainer_host  # noqa: E402
from bird.reward import trainer_wall  # noqa: E402
from bird.reward.jax_export import ExportedReward  # noqa: E402
from bird.types import FailureKind  # noqa: E402


@pytest.fixture
def run(monkeypatch, compose_cfg, tmp_path):
    from bird.learners.job import make_job

    monkeypatch.setenv("BIRD_JAX_CACHE", "off")  # no compile step: nothing to compile
    monkeypatch.setattr(trainer_wall, "TRAINER_MODULE", "fake_workers.trainer")
    cfg = compose_cfg("env=brax/hopper", "train.learner=jax_ppo", "train.jax.update_timeout_s=3",
                      "budget.n_checkpoints=2")

    def _run(scenario: str, n: int = 1, progress=None, timeout_s: float = 0.0, **changes):
        jobs = [replace(make_job(cfg, f"scenario:{scenario}" if i == 0 else f"c{i}", None, i, 192,
                                 tmp_path / ("job" if i == 0 else f"job{i}")),
                        program=ExportedReward(bytes([i]) * 64, ("a",), 11, 3, 32), **{"save_policy": True, **changes})
                for i in range(n)]
        jobs = [replace(j, train=replace(j.train, timeout_s=timeout_s)) for j in jobs]
        attempt = trainer_host.run_trainer(jobs, n, progress)
        return (jobs[0] if n == 1 else jobs), attempt

    return _run


def test_a_well_formed_run_is_read_into_results_and_files(run, tmp_path):
    job, attempt = run("clean")
    assert attempt.group is None and len(attempt.results) == 1, attempt.group
    result = attempt.results[0]
    assert result.ok and [c.env_steps for c in result.curve] == [128, 192] and result.env_steps == 192
    assert result.curve[0].components == {"a": 0.5} and Path(result.policy_path).read_bytes() == b"POLICY!!"
    assert result.shipped == 1 and json.loads((tmp_path / "job" / "checkpoint.json").read_text())["index"] == 1
    record = json.loads((tmp_path / "job" / "jax_ppo.json").read_text())
    assert record["devices"] == ["TFRT_CPU_0"] and all(record["isolation"].values()), record


@pytest.mark.parametrize("scenario, kind, blamed, words", [
    ("setup_deep_json", FailureKind.TRAIN_ERROR, False, "nested too deeply"),
    ("setup_no_settings", FailureKind.TRAIN_ERROR, False, "steps_per_update must be an integer"),
    ("load_live_out_of_range", FailureKind.BAD_OUTPUT, True, "live jobs"),
    ("load_failure_key", FailureKind.BAD_OUTPUT, True, "not in the group"),
    ("load_crash", FailureKind.RUNTIME_ERROR, True, "trainer crashed (SIGSEGV)"),
    ("train_update_skips", FailureKind.BAD_OUTPUT, True, "update must be an integer in [1, 1]"),
    ("train_update_flood", FailureKind.BAD_OUTPUT, True, "update must be an integer in [4, 3]"),
    ("train_checkpoint_inf", FailureKind.BAD_OUTPUT, True, "score=inf is not finite"),
    ("train_checkpoint_extra", FailureKind.BAD_OUTPUT, True, "missing or unknown fields"),
    ("train_never_replies", FailureKind.TIMEOUT, True, "train.jax.update_timeout_s=3 (wall clock)"),
    ("train_ships_another_checkpoint", FailureKind.BAD_OUTPUT, True, "shipped checkpoint 0; its rule picks 1"),
    ("train_crash", FailureKind.RUNTIME_ERROR, True, "trainer crashed (SIGSEGV)"),
    ("outputs_oversized", FailureKind.BAD_OUTPUT, True, "payload of 1099511627776 bytes"),
    ("setup_refused", FailureKind.TRAIN_ERROR, False, "no such task"),
    ("load_refused", FailureKind.RUNTIME_ERROR, True, "a program holds a host callback"),  # a kind it may not claim
    ("load_live_twice", FailureKind.BAD_OUTPUT, True, "a list of live jobs that does not match the group"),
    ("load_live_and_failed", FailureKind.BAD_OUTPUT, True, "a list of live jobs that does not match the group"),
    ("train_error_event", FailureKind.NON_FINITE, True, "NaN in the shared step"),
    ("train_unknown_event", FailureKind.BAD_OUTPUT, True, "an unknown training frame 'resized'"),
    ("train_checkpoint_other_job", FailureKind.BAD_OUTPUT, True, "job must be an integer in [0, 0], got 1"),
    ("train_checkpoint_twice", FailureKind.BAD_OUTPUT, True, "a checkpoint for job 0, which is not training or has all "
                                                             "its checkpoints"),
    ("train_updates_differ", FailureKind.BAD_OUTPUT, True, "updates must be an integer in [3, 3], got 2"),
    ("train_ships_for_another_job", FailureKind.BAD_OUTPUT, True, "shipped checkpoints that do not match the jobs "
                                                                  "that trained"),
    ("outputs_error", FailureKind.RUNTIME_ERROR, True, "rollouts failed"),
    ("outputs_other_job", FailureKind.BAD_OUTPUT, True, "job must be an integer in [0, 0], got 1"),
    ("outputs_twice", FailureKind.BAD_OUTPUT, True, "outputs for job 0, which did not train or already has them"),
])
def test_a_misbehaving_trainer_is_a_recorded_failure_of_its_group(run, scenario, kind, blamed, words):
    _, attempt = run(scenario)
    assert attempt.results == [] and attempt.group is not None
    assert attempt.group.kind == kind and attempt.blame is blamed and words in attempt.group.reason, attempt.group


def test_a_group_reports_each_checkpoint_to_the_progress_and_keeps_each_jobs_curve_and_failure(run, tmp_path):
    seen = []
    jobs, attempt = run("train_one_fails", n=3, progress=lambda *args: seen.append(args))
    assert attempt.group is None and [r.candidate_id for r in attempt.results] == [j.candidate_id for j in jobs]
    ok, failed, third = attempt.results
    assert ok.ok and third.ok and [c.score for c in third.curve] == [2.2, 2.3]
    assert failed.failure.kind == FailureKind.NON_FINITE and failed.failure.reason == "NaN in job 1"
    assert failed.policy_path is None and ok.policy_path is not None and third.env_steps == 192
    assert seen[:3] == [(jobs[0].candidate_id, 128, 192, 0.2), ("c1", 128, 192, 1.2), ("c2", 128, 192, 2.2)]
    assert len(seen) == 6
    record = json.loads((tmp_path / "job2" / "jax_ppo.json").read_text())
    assert record["slots"] == 3 and record["timing"] == {"compile_s": 1.0, "executables_bytes": 0.0,
                                                          "train_s": 2.0}
    assert record["settings"] == {"steps_per_update": 64, "n_updates": 3} and record["program"] == jobs[2].program.digest
    assert set(attempt.seconds) >= {"start_s", "setup_s", "load_s", "train_s", "outputs_s"}


def test_a_group_whose_every_program_failed_to_load_is_not_trained(run):
    jobs, attempt = run("load_none_live", n=2)
    assert attempt.group is None
    assert [(r.failure.kind, r.failure.reason, r.env_steps, r.curve) for r in attempt.results] == [
        (FailureKind.REJECTED, "bad program 0", 0, ()), (FailureKind.REJECTED, "bad program 1", 0, ())]


def test_a_job_that_asks_for_no_outputs_gets_none_and_the_trainer_is_not_asked(run):
    job, attempt = run("clean", save_policy=False)
    assert attempt.group is None and attempt.results[0].ok and attempt.results[0].policy_path is None
    assert "outputs_s" not in attempt.seconds


def test_a_training_past_its_overall_limit_keeps_the_curve_so_far_and_times_out(run, monkeypatch):
    monkeypatch.setattr(trainer_host, "TIMEOUT_GRACE_S", 0.0)  # the trainer's own check has had its chance
    job, attempt = run("train_slow", timeout_s=1.0)  # the trainer sends its first update after 5 s
    assert attempt.group is None
    [result] = attempt.results
    assert result.failure.kind == FailureKind.TIMEOUT and result.failure.reason == "training exceeded train.timeout_s=1"
    assert result.curve == () and result.policy_path is None and result.env_steps == 0


def test_outputs_for_a_job_that_failed_are_refused(run):
    _, attempt = run("outputs_for_failed", n=2)
    assert attempt.group.kind == FailureKind.BAD_OUTPUT and attempt.blame
    assert attempt.group.reason == "outputs for job 1, which did not train or already has them"


@pytest.fixture
def compile_step(monkeypatch, tmp_path):
    """The compile step on (BIRD_JAX_CACHE set): it runs as the fake trainer module's compile_main."""
    monkeypatch.setenv("BIRD_JAX_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(trainer_host, "_COMPILED", {})


def test_the_compile_steps_executables_reach_the_trainer_and_are_kept_for_the_next_group(run, compile_step, tmp_path):
    from bird.learners.jax_executables import StoredPrograms, store_dir

    job, attempt = run("compile_ok")
    assert attempt.group is None and attempt.results[0].ok
    [(key, executables)] = trainer_host._COMPILED.items()
    assert executables.startswith(b"EXECUTABLES compile_ok 1 ")
    sent = json.loads((tmp_path / "job" / "jax_ppo.json").read_text())["timing"]["executables_bytes"]
    assert sent == len(executables)
    _, again = run("compile_ok")  # the same shape in this process: not compiled again
    assert again.group is None and {key: executables} == trainer_host._COMPILED
    trainer_host._COMPILED.clear()  # another process: read from the store
    assert trainer_host.ensure_compiled([replace(job, program=None)], 1, 30.0) == executables
    wall, env = trainer_host.trainer_isolation(job)
    assert StoredPrograms(store_dir(), {"PATH": os.defpath, **env}, wall.devices).get(key) == executables


def test_the_compile_key_is_the_program_not_the_trainers_limits(run, compile_step):
    job, _ = run("compile_ok")
    jax = replace(job.train.jax, trainer_memory_mb=1, compile_timeout_s=2.0, update_timeout_s=3.0)
    assert trainer_host._compile_key([replace(job, train=replace(job.train, jax=jax))], 1) == \
        trainer_host._compile_key([job], 1)
    assert trainer_host._compile_key([job], 2) != trainer_host._compile_key([job], 1)
    assert trainer_host._compile_key([replace(job, env_steps=384)], 1) != trainer_host._compile_key([job], 1)


@pytest.mark.parametrize("scenario, kind, reason", [
    ("compile_fails", FailureKind.TRAIN_ERROR,
     "compiling the training program failed: ValueError: no training program for this shape"),
    ("compile_silent_failure", FailureKind.TRAIN_ERROR, "compiling the training program failed: exit 4"),
])
def test_a_compile_step_that_fails_is_every_jobs_failure_and_blames_no_program(run, compile_step, scenario, kind,
                                                                               reason):
    _, attempt = run(scenario)
    assert (attempt.group.kind, attempt.group.reason, attempt.blame, attempt.results) == (kind, reason, False, [])
    assert trainer_host._COMPILED == {}


def test_a_compile_step_past_its_limit_is_a_timeout(run, compile_step):
    job, _ = run("compile_ok")
    hung = replace(job, candidate_id="scenario:compile_hangs", env_steps=384,
                   train=replace(job.train, jax=replace(job.train.jax, compile_timeout_s=1.0)))
    attempt = trainer_host.run_trainer([hung], 1)
    assert (attempt.group.kind, attempt.group.reason, attempt.blame) == (
        FailureKind.TIMEOUT, "compiling the training program exceeded train.jax.compile_timeout_s=1", False)
