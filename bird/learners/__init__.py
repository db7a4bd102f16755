"""Learners (registry family `learner`). Each is a function (TrainJob, progress) -> TrainResult, imported lazily."""

from __future__ import annotations

from typing import Any

from bird.learners import checkpoints  # noqa: F401  (registers checkpoint_selection and early_stop)
from bird.registry import register

__all__: list[str] = []


@register("learner", "sb3_ppo")
def sb3_ppo(job: Any, progress: Any = None) -> Any:
    from bird.learners.sb3_ppo import train_ppo

    return train_ppo(job, progress)


@register("learner", "none")
def no_learner(job: Any, progress: Any = None) -> Any:
    """No RL training: the candidate is judged without a policy (e.g. demo fitness). Never sent to the pool."""
    from bird.types import TrainResult

    return TrainResult(job.candidate_id, job.seed, (), 0, 0.0)


no_learner.trains = False  # type: ignore[attr-defined]
