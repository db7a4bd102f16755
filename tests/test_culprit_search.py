"""The culprit search of the isolated JAX trainer (bird/learners/jax_isolated.py), against a stand-in for one
trainer run: a group fails when it holds a poisoned program, as a real trainer's shared step does. The real
trainer's version of this (a hanging artefact among clean programs) is tests/security/test_jax_path.py."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bird.learners.jax_isolated import search_culprits
from bird.learners.trainer_host import Attempt
from bird.reward.jax_export import ExportedReward
from bird.types import Failure, FailureKind, TrainResult

HANG = Failure(FailureKind.TIMEOUT, "training update 1 exceeded train.jax.update_timeout_s=600")


@pytest.fixture
def jobs(compose_cfg, tmp_path):
    from bird.learners.job import make_job

    cfg = compose_cfg("env=brax/hopper", "train.learner=jax_ppo")
    return [replace(make_job(cfg, f"c{i}", None, i, 192, tmp_path / f"c{i}"),
                    program=ExportedReward(bytes([i]) * 64, (), 11, 3, 32)) for i in range(7)]


class Trainer:
    """One run per call: the group fails (after its programs were sent) when it holds a poisoned candidate."""

    def __init__(self, poisoned: set[str], blame: bool = True) -> None:
        self.poisoned, self.blame, self.calls, self.progress = poisoned, blame, [], []

    def __call__(self, group, width, progress=None) -> Attempt:
        self.calls.append(([j.candidate_id for j in group], width))
        self.progress.append(progress)
        if any(j.candidate_id in self.poisoned for j in group):
            return Attempt(group=HANG, blame=self.blame)
        return Attempt(results=[TrainResult(j.candidate_id, j.seed, (), 192, 1.0) for j in group])


def test_each_culprit_fails_alone_and_every_other_job_trains_in_a_group_without_one(jobs):
    trainer = Trainer({"c2", "c5"})
    found = search_culprits(jobs, 7, runner=trainer)
    assert sorted(found) == list(range(7)) and [found[i].candidate_id for i in range(7)] == [j.candidate_id for j in jobs]
    assert {r.candidate_id for r in found.values() if r.failure is not None} == {"c2", "c5"}
    assert found[2].failure == HANG and found[0].env_steps == 192
    assert (["c2"], 7) in trainer.calls and (["c5"], 7) in trainer.calls  # each found alone
    assert {w for _, w in trainer.calls} == {7}  # every retry keeps the group's width
    trained = [g for g, _ in trainer.calls if not set(g) & {"c2", "c5"}]
    assert sorted(c for g in trained for c in g) == ["c0", "c1", "c3", "c4", "c6"]  # each trained exactly once
    assert len(trainer.calls) <= 1 + 2 * 2 * 3  # at most two halves per level for each culprit


def test_a_group_without_a_culprit_is_trained_once(jobs):
    trainer = Trainer(set())
    assert all(r.failure is None for r in search_culprits(jobs, 7, runner=trainer).values())
    assert len(trainer.calls) == 1


def test_a_failure_before_the_programs_arrived_is_every_jobs_and_is_not_retried(jobs):
    trainer = Trainer({"c3"}, blame=False)  # e.g. the trainer did not start, or the training program did not compile
    found = search_culprits(jobs, 7, runner=trainer)
    assert len(trainer.calls) == 1 and all(r.failure == HANG for r in found.values())


def test_a_group_of_reference_reward_jobs_is_not_searched(jobs):
    trainer = Trainer({"c0"})
    found = search_culprits([replace(j, program=None) for j in jobs[:3]], 3, runner=trainer)
    assert len(trainer.calls) == 1 and all(r.failure == HANG for r in found.values())


def test_a_group_that_mixes_a_reference_reward_job_with_candidates_is_searched(jobs):
    mixed = [replace(jobs[0], program=None), *jobs[1:4]]  # the reference reward's job, then three candidates
    trainer = Trainer({"c2"})
    found = search_culprits(mixed, 4, runner=trainer)
    assert {i for i, r in found.items() if r.failure is not None} == {2}  # only the culprit fails
    assert found[0].failure is None and found[3].env_steps == 192  # the reference job and the others trained
    assert (["c2"], 4) in trainer.calls


def test_jobs_of_other_budgets_train_in_groups_of_their_own_and_come_back_in_job_order(jobs, monkeypatch):
    from bird.learners import jax_isolated

    trainer = Trainer({"c2"})
    monkeypatch.setattr(jax_isolated, "run_trainer", trainer)
    longer = [replace(j, env_steps=384) for j in jobs[4:6]]  # another budget: another training program
    mixed = [jobs[0], longer[0], jobs[2], longer[1], jobs[3]]
    results = jax_isolated.train_isolated(mixed)
    assert [r.candidate_id for r in results] == ["c0", "c4", "c2", "c5", "c3"]
    assert [r.failure is not None for r in results] == [False, False, True, False, False]
    assert trainer.calls == [(["c0", "c2", "c3"], 3), (["c0"], 3), (["c2", "c3"], 3), (["c2"], 3), (["c3"], 3),
                             (["c4", "c5"], 2)]  # each group at its own width, searched apart


def test_a_culprit_is_recorded_as_untrained_with_its_own_seed_and_the_failure_of_its_run(jobs):
    found = search_culprits(jobs[:3], 3, runner=Trainer({"c1"}))
    assert found[1] == TrainResult("c1", jobs[1].seed, (), 0, 0.0, HANG)
    assert jobs[1].seed == 1


def _progress(*args) -> None:
    """A progress callback (the loop's)."""


def test_every_trainer_run_of_the_search_reports_to_the_callers_progress(jobs, monkeypatch):
    from bird.learners import jax_isolated

    trainer = Trainer({"c2"})
    search_culprits(jobs[:4], 4, _progress, runner=trainer)
    assert len(trainer.progress) > 1 and set(trainer.progress) == {_progress}
    trainer = Trainer({"c1"})
    monkeypatch.setattr(jax_isolated, "run_trainer", trainer)
    jax_isolated.train_isolated(jobs[:3], _progress)
    assert len(trainer.progress) > 1 and set(trainer.progress) == {_progress}
