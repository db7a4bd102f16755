"""Suite registry: `env.id = "<suite>/<task>"` picks a suite factory; suite modules import lazily."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bird.config.schema import EnvConfig
from bird.envs.base import TaskAdapter
from bird.registry import Component, get, names, register

__all__ = ["Suite", "make_adapter", "split_env_id", "suite_defines_success"]


@dataclass(frozen=True)
class Suite(Component):
    """An environment suite: `fn(task, env_cfg) -> TaskAdapter`, and what it offers (checked when a config loads).

    :param scripted_expert: its adapters have expert_policy() (scripted-expert demonstrations).
    :param backends: the simulator backends env.backend may name (empty: one simulator).
    :param provides: when set, {"representations": env representations it offers, "frames": renders frames}.
    :param success_flag: its benchmark defines task success (a flag its score counts: Meta-World); Gym MuJoCo v5 and
        Brax define none (their scores are physical quantities), so feedback never prints a success line there.
    """

    scripted_expert: bool = False
    backends: tuple[str, ...] = ()
    provides: Mapping[str, Any] | None = None
    success_flag: bool = False


def split_env_id(env_id: str) -> tuple[str, str]:
    suite, sep, task = env_id.partition("/")
    if not sep or not suite or not task:
        raise ValueError(f"env.id must look like '<suite>/<task>', got {env_id!r}")
    return suite, task


def make_adapter(cfg: EnvConfig) -> TaskAdapter:
    """Build the TaskAdapter that `cfg.id` names."""
    suite, task = split_env_id(cfg.id)
    return get("suite", suite)(task, cfg)


def _mujoco(task: str, cfg: EnvConfig) -> TaskAdapter:
    from bird.envs.mujoco import make_task

    return make_task(task, cfg)


def _metaworld(task: str, cfg: EnvConfig) -> TaskAdapter:
    from bird.envs.metaworld import make_task

    return make_task(task, cfg)


register("suite", "mujoco")(Suite(_mujoco))
register("suite", "metaworld")(Suite(_metaworld, scripted_expert=True, success_flag=True))


def suite_defines_success(suite: str) -> bool:
    """True when `suite`'s benchmark defines a success flag (False for an unknown suite)."""
    return suite in names("suite") and get("suite", suite).success_flag


# hidden facts of a task (bird/leaks.py): (names of its reference reward and success check, success thresholds)
@register("hidden_facts", "mujoco")
def _mujoco_hidden(task: str) -> tuple[frozenset[str], tuple[float, ...]]:
    """Gymnasium's reward names; no thresholds: Gym MuJoCo v5 has no success check (the score is a physical quantity)."""
    import gymnasium as gym

    from bird.envs.mujoco.source import hidden_names
    from bird.envs.mujoco.tasks import TASKS

    return hidden_names(type(gym.make(TASKS[task].gym_id).unwrapped)), ()


@register("hidden_facts", "metaworld")
def _metaworld_hidden(task: str) -> tuple[frozenset[str], tuple[float, ...]]:
    """Meta-World's reward and success code names, and the numbers evaluate_state's success compares against."""
    from bird.envs.metaworld.source import hidden_names, success_thresholds
    from bird.envs.metaworld.tasks import TASKS, canonical_task

    mw_name = TASKS[canonical_task(task)].mw_name
    return hidden_names(mw_name), success_thresholds(mw_name)


@register("hidden_facts", "brax")
def _brax_hidden(task: str) -> tuple[frozenset[str], tuple[float, ...]]:
    """The reward names of the brax env's module (its reward terms and metrics); no thresholds: no success check."""
    from bird.envs.brax.adapter import brax_env
    from bird.envs.brax.tasks import TASKS
    from bird.envs.mujoco.source import hidden_names

    defn = TASKS[task]
    return hidden_names(type(brax_env(defn.brax_name, defn.default_backend))), ()


def _brax(task: str, cfg: EnvConfig) -> TaskAdapter:
    from bird.envs.brax import make_task

    return make_task(task, cfg)


register("suite", "brax")(Suite(_brax, backends=("generalized", "positional", "spring", "mjx"),
                               provides={"representations": ("full_source", "obs_code", "obs_index"), "frames": False}))
