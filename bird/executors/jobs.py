"""How both executors turn a learner name and its jobs into learner calls, and the calls' results back into one
result per job (in job order)."""

from __future__ import annotations

from collections.abc import Callable

from bird.learners.job import TrainJob
from bird.learners.programs import export_jobs
from bird.plugins import load as load_plugins
from bird.registry import get
from bird.types import Failure, FailureKind, TrainResult

__all__ = ["OnProgress", "assemble", "call_learner", "failed_result", "prepare"]

OnProgress = Callable[[str, int, int, "float | None"], None]


def failed_result(job: TrainJob, reason: str) -> TrainResult:
    """The result of a job whose training process died or raised: a train_error with the reason."""
    return TrainResult(job.candidate_id, job.seed, (), 0, 0.0, Failure(FailureKind.TRAIN_ERROR, reason[:500]))


def prepare(learner: str, jobs: list[TrainJob]) -> tuple[list[list[TrainJob]], dict[int, Failure]]:
    """(groups of jobs, one learner call each; {job index: Failure} for jobs that cannot start).

    A learner whose language is jax gets its programs exported first (bird/learners/programs.py); a `batched` learner
    gets all its jobs in one call."""
    try:
        fn = get("learner", learner)
    except ValueError:  # an unknown learner fails in each job's worker, recorded as that job's train_error
        return [[job] for job in jobs], {}
    failed: dict[int, Failure] = {}
    if fn.language == "jax":
        jobs, failed = export_jobs(jobs)
    live = [job for i, job in enumerate(jobs) if i not in failed]
    if fn.batched:
        return ([live] if live else []), failed
    return [[job] for job in live], failed


def call_learner(learner: str, group: list[TrainJob], progress: OnProgress) -> list[TrainResult]:
    """Run one group from `prepare` in this process (a worker), after importing the plugins its jobs name."""
    load_plugins(group[0].plugins)
    fn = get("learner", learner)
    out = fn(group, progress) if fn.batched else fn(group[0], progress)
    return out if isinstance(out, list) else [out]


def assemble(jobs: list[TrainJob], failed: dict[int, Failure], done: list[TrainResult]) -> list[TrainResult]:
    """Results in job order: the groups' results (in group order) with the jobs that could not start filled in."""
    it = iter(done)
    return [TrainResult(job.candidate_id, job.seed, (), 0, 0.0, failed[i]) if i in failed else next(it)
            for i, job in enumerate(jobs)]
