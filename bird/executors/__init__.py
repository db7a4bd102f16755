"""Where one search's trainings run (registry family `executor`, config `train.executor`).

Both executors take a list of TrainJobs and return TrainResults in job order; a training that dies is a
`train_error` result of that job, never an exception. Progress messages go to the `on_progress` callback.
"""

from __future__ import annotations

from typing import Protocol

from bird.config.schema import BirdConfig
from bird.executors.jobs import OnProgress
from bird.learners.job import TrainJob
from bird.registry import get, register
from bird.types import TrainResult

__all__ = ["Executor", "OnProgress", "make_executor"]


class Executor(Protocol):
    def run(self, learner: str, jobs: list[TrainJob]) -> list[TrainResult]:
        """Train every job with registry learner `learner`; results in job order."""
        ...

    def close(self) -> None:
        """Release workers (and a Ray this executor started)."""
        ...


@register("executor", "local")
def _local(cfg: BirdConfig, workers: int, on_progress: OnProgress | None) -> Executor:
    """A pool of `workers` processes on this machine (bird/executors/local.py)."""
    from bird.executors.local import TrainPool

    return TrainPool(workers, on_progress, cfg.train.start_method)


@register("executor", "ray", needs_module=("ray", "pip install 'bird-ird[cluster]'"))
def _ray(cfg: BirdConfig, workers: int, on_progress: OnProgress | None) -> Executor:
    """One Ray task per training, on a local Ray or the cluster at ray.address (bird/executors/ray_tasks.py)."""
    from bird.executors.ray_tasks import RayExecutor

    return RayExecutor(cfg.ray, cfg.train.resources, on_progress)


def make_executor(cfg: BirdConfig, workers: int, on_progress: OnProgress | None = None) -> Executor:
    """The executor `train.executor` names."""
    return get("executor", cfg.train.executor)(cfg, workers, on_progress)
