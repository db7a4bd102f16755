"""Exporting the reward programs of a jax_ppo batch (bird/learners/programs.py) without training them: which jobs get
an inspected artefact for their rollout's rows, which a recorded failure, and that a program shared by several jobs
is exported once (the trainings that use them: test_jax_learner.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from jax_programs import FORWARD, TINY, UPRIGHT

from bird.learners.job import make_job
from bird.learners.programs import export_jobs, training_rows
from bird.reward.jax_export import ExportedReward
from bird.types import FailureKind


@pytest.fixture(scope="module")
def cfg(compose_cfg):
    return compose_cfg(*TINY)


def _job(cfg, tmp_path, cid: str, code: str | None, env_steps: int = 64, **changes):
    return replace(make_job(cfg, cid, code, 0, env_steps, tmp_path / cid), **changes)


def test_a_rollouts_rows_are_its_decisions_per_update_times_its_envs(cfg, tmp_path):
    job = _job(cfg, tmp_path, "c0", FORWARD)
    # TINY: 4 envs, batch 4 x 2 minibatches of 8-step unrolls: 8 rollouts of 8 decisions per update, 4 envs each
    assert training_rows(job, "inverted_pendulum") == (4 * 2 // 4) * 8 * 4


def test_each_job_gets_its_inspected_artefact_and_no_source(cfg, tmp_path):
    jobs = [_job(cfg, tmp_path, "c0", FORWARD), _job(cfg, tmp_path, "c1", UPRIGHT),
            _job(cfg, tmp_path, "ref", None)]
    out, failures = export_jobs(jobs)
    assert failures == {}
    assert [(j.candidate_id, j.code) for j in out] == [("c0", None), ("c1", None), ("ref", None)]
    assert isinstance(out[0].program, ExportedReward) and out[0].program.components == ("forward", "ctrl")
    assert out[0].program.rows == training_rows(jobs[0], "inverted_pendulum") and out[1].program.components == (
        "upright", "centred")
    assert out[2].program is None and out[2] is jobs[2]  # the reference reward: nothing to export


def test_a_program_shared_by_jobs_of_one_size_is_exported_once(cfg, tmp_path, monkeypatch):
    from bird.learners import programs

    calls = []
    real = programs._export
    monkeypatch.setattr(programs, "_export", lambda *args: calls.append(args[2]) or real(*args))
    seeds = [_job(cfg, tmp_path, f"s{i}", FORWARD) for i in range(3)]
    wide = replace(seeds[0], candidate_id="wide", env_steps=1024, train=replace(seeds[0].train, jax=replace(
        seeds[0].train.jax, num_envs=8, batch_size=8)))  # another rollout size: another artefact
    out, failures = export_jobs([*seeds, wide])
    assert failures == {} and sorted(calls) == [64, 128]
    assert out[0].program is out[1].program is out[2].program and out[3].program.rows == 128


def test_a_program_that_cannot_be_exported_fails_only_its_own_job(cfg, tmp_path):
    broken = FORWARD.replace('next_obs["slider_vel"]', 'next_obs["no_such_field"]')
    jobs = [_job(cfg, tmp_path, "bad", broken), _job(cfg, tmp_path, "good", UPRIGHT)]
    out, failures = export_jobs(jobs)
    assert list(failures) == [0] and failures[0].kind != FailureKind.TRAIN_ERROR and "no_such_field" in \
        failures[0].reason
    assert out[0] is jobs[0] and out[1].program is not None and out[1].code is None


def test_a_program_in_another_language_is_the_learners_failure(cfg, tmp_path):
    job = _job(cfg, tmp_path, "np", "def compute_reward(o, a, n, i):\n    return 0.0, {}\n", language="numpy")
    out, failures = export_jobs([job])
    assert failures == {0: failures[0]} and failures[0].kind == FailureKind.TRAIN_ERROR
    assert failures[0].reason == "the learner needs reward.language=jax programs, got numpy"
    assert out == [job]


# -- which jobs are exported with what (the export itself stands in: _export records its arguments) --------------
class Recorded:
    """A stand-in for the export: records (candidate, spec, rows) and returns a marker artefact."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object, int]] = []

    def __call__(self, job, spec, rows):
        self.calls.append((job.candidate_id, spec, rows))
        return ("artefact", job.candidate_id, rows)


def test_reference_and_wrong_language_jobs_are_skipped_and_the_jobs_after_them_exported(cfg, tmp_path, monkeypatch):
    from bird.learners import programs

    export = Recorded()
    monkeypatch.setattr(programs, "_export", export)
    jobs = [_job(cfg, tmp_path, "ref", None), _job(cfg, tmp_path, "np", "x = 1\n", language="numpy"),
            _job(cfg, tmp_path, "c0", FORWARD)]
    out, failures = export_jobs(jobs)
    assert list(failures) == [1] and [c[0] for c in export.calls] == ["c0"]
    assert out[0] is jobs[0] and out[1] is jobs[1] and out[2].program == ("artefact", "c0", 64)


def test_each_env_gets_its_own_adapter_built_once_and_its_own_tasks_rows(cfg, tmp_path, monkeypatch):
    """Two envs: each job is exported with its env's observation spec and for its task's rollout size (the task
    table of train.jax applies where the command line leaves a setting unset)."""
    from types import SimpleNamespace

    from bird.envs import registry
    from bird.learners import programs

    built = []

    def adapter(env):
        built.append(env.id)
        task = env.id.partition("/")[2]
        return SimpleNamespace(task=task, spec=f"spec of {task}")

    export = Recorded()
    monkeypatch.setattr(registry, "make_adapter", adapter)
    monkeypatch.setattr(programs, "_export", export)
    base = _job(cfg, tmp_path, "a", FORWARD)
    other_env = replace(base.env, id="brax/hopper")
    jax_cfg = replace(base.train.jax, unroll_length=None, tasks={"hopper": {"unroll_length": 2}})
    jobs = [base, replace(base, candidate_id="b", env=other_env, train=replace(base.train, jax=jax_cfg)),
            replace(base, candidate_id="c", code=UPRIGHT)]
    out, failures = export_jobs(jobs)
    assert failures == {} and built == ["brax/inverted_pendulum", "brax/hopper"]
    assert sorted(export.calls) == [("a", "spec of inverted_pendulum", 64), ("b", "spec of hopper", 16),
                                    ("c", "spec of inverted_pendulum", 64)]
    assert training_rows(jobs[1], "hopper") == 16 and training_rows(jobs[1], "inverted_pendulum") != 16


@pytest.mark.parametrize(("tasks", "cores", "workers"), [(1, 4, 1), (3, 2, 2), (3, 8, 3), (2, None, 1)])
def test_exports_run_side_by_side_as_many_as_there_are_cores(cfg, tmp_path, monkeypatch, tasks, cores, workers):
    from concurrent.futures import ThreadPoolExecutor

    from bird.learners import programs

    pools = []

    class Pool(ThreadPoolExecutor):
        def __init__(self, max_workers=None, thread_name_prefix=""):
            pools.append((max_workers, thread_name_prefix))
            super().__init__(max_workers=max_workers, thread_name_prefix=thread_name_prefix)

    monkeypatch.setattr(programs, "ThreadPoolExecutor", Pool)
    monkeypatch.setattr(programs, "_export", Recorded())
    monkeypatch.setattr(programs.os, "cpu_count", lambda: cores)
    codes = [FORWARD, UPRIGHT, FORWARD.replace("1e-3", "2e-3")][:tasks]
    export_jobs([_job(cfg, tmp_path, f"c{i}", code) for i, code in enumerate(codes)])
    assert pools == [(workers, "export")]


def test_a_program_is_checked_under_its_jobs_contract(cfg, tmp_path):
    job = _job(cfg, tmp_path, "w", FORWARD, contract="weighted_components", language="jax")
    out, failures = export_jobs([job])
    assert list(failures) == [0] and "REWARD_WEIGHTS" in failures[0].reason and out == [job]  # its contract's check


def test_loading_a_program_gets_the_bulk_time_limit_not_the_per_call_one(cfg, tmp_path):
    slow_import = "_warm = sum(i * i for i in range(2_000_000))\n" + FORWARD  # tens of ms of module-level code
    job = _job(cfg, tmp_path, "slow", slow_import, call_timeout_s=0.001)
    out, failures = export_jobs([job])
    assert failures == {} and out[0].program is not None
