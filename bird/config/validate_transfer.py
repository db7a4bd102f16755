"""Checks of transfer.* (the generalisation protocol, bird/stages/transfer.py): the run's task has unseen tasks of its
own suite, and the final retrain leaves the policies they are evaluated with."""

from __future__ import annotations

from bird import registry
from bird.config.schema import BirdConfig

__all__ = ["check_transfer"]

# learners whose saved policy (run.save_policies) the transfer evaluation loads: SB3's policy.npz
_POLICY_LEARNERS = ("sb3_ppo",)


def check_transfer(cfg: BirdConfig, problems: list[str]) -> None:
    """Problems of transfer.tasks and transfer.episodes (nothing to check when no task is named)."""
    t = cfg.transfer
    if not t.tasks:
        return
    if t.episodes < 1:
        problems.append(f"transfer.episodes={t.episodes}: must be >= 1")
    if cfg.env.id not in t.tasks:
        problems.append(f"transfer.tasks has no unseen tasks for env.id={cfg.env.id!r}; its sources: {sorted(t.tasks)}")
    for source, unseen in t.tasks.items():
        suite = source.partition("/")[0]
        names = registry.get("suite", suite).task_names if suite in registry.names("suite") else None
        for env_id in unseen:
            other, _, task = env_id.partition("/")
            if other != suite:
                problems.append(f"transfer.tasks[{source!r}]: {env_id!r} is not a task of suite {suite!r} (the policy "
                                f"is evaluated on the observation and actions it was trained on)")
            elif names is not None:
                try:
                    names(task)
                except ValueError as exc:
                    problems.append(f"transfer.tasks[{source!r}]: {exc}")
    if not cfg.final.retrain:
        problems.append("transfer.tasks needs final.retrain=true: the final retrain's policies are what is evaluated")
    learner = cfg.final.learner or cfg.train.learner
    if learner not in _POLICY_LEARNERS:
        problems.append(f"transfer.tasks evaluates saved policies of the learners {list(_POLICY_LEARNERS)}; the final "
                        f"retrain's learner is {learner!r} (set final.learner)")
