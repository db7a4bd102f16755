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


@register("learner", "jax_ppo")
def jax_ppo(jobs: Any, progress: Any = None) -> Any:
    """PPO in JAX on Brax: a list of jobs (the iteration's candidates × seeds) trained in one program."""
    from bird.learners.jax_ppo import train_jax_ppo

    return train_jax_ppo(jobs, progress)


jax_ppo.batched = True  # type: ignore[attr-defined]  # called once with every job of a stage
jax_ppo.language = "jax"  # type: ignore[attr-defined]  # jobs carry exported programs (bird/learners/programs.py)
jax_ppo.needs = {  # type: ignore[attr-defined]  # what the JAX path supports (checked when the config loads)
    "reward.language": ("jax",), "reward.contract": ("compute_reward",), "reward.form": ("direct",),
    "train.obs_augment": ("none",), "train.early_stop": ("none",),  # a group of trainings cannot stop one of them
}


@register("learner", "none")
def no_learner(job: Any, progress: Any = None) -> Any:
    """No RL training: the candidate is judged without a policy (e.g. demo fitness). Never sent to the pool."""
    from bird.types import TrainResult

    return TrainResult(job.candidate_id, job.seed, (), 0, 0.0)


no_learner.trains = False  # type: ignore[attr-defined]
