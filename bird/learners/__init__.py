"""Learners (registry family `learner`): each a Learner whose `fn` trains (TrainJob, progress) -> TrainResult, or a
list of jobs in one call when `batched`. Heavy libraries are imported lazily, inside `fn`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bird.learners import checkpoints  # noqa: F401  (registers checkpoint_selection and early_stop)
from bird.registry import Component, register
from bird.types import TrainResult

__all__ = ["Learner"]


@dataclass(frozen=True)
class Learner(Component):
    """A learner and its capabilities.

    :param trains: False for a learner that trains no policy (its jobs never go to an executor).
    :param batched: `fn` takes every job of a stage in one call (a list) and returns a list of results.
    :param language: the reward language its jobs carry: "numpy" (source code) or "jax" (exported programs).
    :param needs: config key -> allowed values, checked when the config loads (Component).
    :param first_update: env steps (train config, envs per training) before its first policy update, where known:
        a checkpoint at or before it evaluates the untrained policy, the same whatever the reward.
    """

    trains: bool = True
    batched: bool = False
    language: str = "numpy"
    first_update: Any = None


def _sb3_ppo(job: Any, progress: Any = None) -> TrainResult:
    from bird.learners.sb3_ppo import train_ppo

    return train_ppo(job, progress)


def _jax_ppo(jobs: Any, progress: Any = None) -> list[TrainResult]:
    """PPO in JAX on Brax: a list of jobs (the iteration's candidates × seeds) trained in one program, in an isolated
    trainer process (bird/learners/jax_isolated.py)."""
    from bird.learners.jax_isolated import train_isolated

    return train_isolated(jobs, progress)


def _no_learner(job: Any, progress: Any = None) -> TrainResult:
    """No RL training: the candidate is judged without a policy (e.g. demo fitness). Never sent to an executor."""
    return TrainResult(job.candidate_id, job.seed, (), 0, 0.0)


register("learner", "sb3_ppo")(Learner(_sb3_ppo, first_update=lambda train, n_envs: train.n_steps * n_envs))
register("learner", "jax_ppo")(Learner(
    _jax_ppo, batched=True, language="jax", needs_task=("jax_env",),  # trains Brax envs, with exported programs
    needs={"reward.language": ("jax",), "reward.contract": ("compute_reward",), "reward.form": ("direct",),
           "train.obs_augment": ("none",),
           "train.early_stop": ("none",)}))  # a group of trainings runs as one program: none can stop alone
register("learner", "none")(Learner(_no_learner, trains=False))
