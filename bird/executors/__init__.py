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

__all__ = ["Executor", "OnProgress", "make_executor", "failed_result"]

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
