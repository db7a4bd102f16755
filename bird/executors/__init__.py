"""Where one search's trainings run (registry family `executor`, config `train.executor`).

Both executors take a list of TrainJobs and return TrainResults in job order; a training that dies is a
`train_error` result of that job, never an exception. Progress messages go to the `on_progress` callback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from bird.learners.job import TrainJob
from bird.registry import get, register
from bird.types import Failure, FailureKind, TrainResult

__all__ = ["Executor", "OnProgress", "assemble", "call_learner", "failed_result", "make_executor", "prepare"]

OnProgress = Callable[[str, int, int, "float | None"], None]


class Executor(Protocol):
    def run(self, learner: str, jobs: list[TrainJob]) -> list[TrainResult]:
        """Train every job with registry learner `learner`; results in job order."""
        ...

    def close(self) -> None:
        """Release workers (and a Ray this executor started)."""
        ...


def failed_result(job: TrainJob, reason: str) -> TrainResult:
    """The result of a job whose training process died or raised: a train_error with the reason."""
    return TrainResult(job.candidate_id, job.seed, (), 0, 0.0, Failure(FailureKind.TRAIN_ERROR, reason[:500]))


def prepare(learner: str, jobs: list[TrainJob]) -> tuple[list[list[TrainJob]], dict[int, Failure]]:
    """(groups of jobs, one learner call each; {job index: Failure} for jobs that cannot start).

    A learner with `language` gets its programs exported first (bird/learners/programs.py); a `batched` learner gets
    all its jobs in one call."""
    try:
        fn = get("learner", learner)
    except ValueError:  # an unknown learner fails in each job's worker, recorded as that job's train_error
        return [[job] for job in jobs], {}
    failed: dict[int, Failure] = {}
    if getattr(fn, "language", None) == "jax":
        from bird.learners.programs import export_jobs

        jobs, failed = export_jobs(jobs)
    live = [job for i, job in enumerate(jobs) if i not in failed]
    if getattr(fn, "batched", False):
        return ([live] if live else []), failed
    return [[job] for job in live], failed


def call_learner(learner: str, group: list[TrainJob], progress: OnProgress) -> list[TrainResult]:
    """Run one group from `prepare` in this process."""
    fn = get("learner", learner)
    out = fn(group, progress) if getattr(fn, "batched", False) else fn(group[0], progress)
    return out if isinstance(out, list) else [out]


def assemble(jobs: list[TrainJob], failed: dict[int, Failure], done: list[TrainResult]) -> list[TrainResult]:
    """Results in job order: the groups' results (in group order) with the jobs that could not start filled in."""
    it = iter(done)
    return [TrainResult(job.candidate_id, job.seed, (), 0, 0.0, failed[i]) if i in failed else next(it)
            for i, job in enumerate(jobs)]


@register("executor", "local")
def _local(cfg: Any, workers: int, on_progress: OnProgress | None) -> Executor:
    """A pool of `workers` spawned processes on this machine (bird/pool.py)."""
    from bird.pool import TrainPool

    return TrainPool(workers, on_progress)


@register("executor", "ray")
def _ray(cfg: Any, workers: int, on_progress: OnProgress | None) -> Executor:
    """One Ray task per training, on a local Ray or the cluster at ray.address (bird/executors/ray_tasks.py)."""
    from bird.executors.ray_tasks import RayExecutor

    return RayExecutor(cfg.ray, cfg.train.resources, on_progress)


_ray.needs_module = ("ray", "pip install 'bird-ird[cluster]'")  # type: ignore[attr-defined]


def make_executor(cfg: Any, workers: int, on_progress: OnProgress | None = None) -> Executor:
    """The executor `train.executor` names."""
    return get("executor", cfg.train.executor)(cfg, workers, on_progress)
