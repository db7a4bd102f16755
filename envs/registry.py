"""Suite registry: `env.id = "<suite>/<task>"` picks a suite factory; suite modules import lazily."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bird.config.schema import EnvConfig
from bird.envs.base import TaskAdapter
from bird.registry import Component, get, names, register

__all__ = ["Suite", "TaskOffers", "ends_on_success", "make_adapter", "split_env_id", "suite_defines_success"]


@dataclass(frozen=True)
class TaskOffers:
    """What one task offers the settings that depend on it (read by bird/config/validate.py and the task checker).

    :param representations: the generate.env_representation values it serves (None: not declared, any).
    :param frames: it renders frames (judge.mode=vlm); None: not declared.
    :param success_flag: its steps carry a success flag (info["success"]).
    :param reference_reward: it has a reference (published) reward: the native signal and reference_return need one,
        and a PPO expert trains on it (demos.expert=ppo).
    :param scripted_expert: its adapter has expert_policy() (scripted-expert demonstrations, demos.expert=scripted).
    :param jax_env: its env runs in JAX (Brax), so train.learner=jax_ppo can train on it.
    :param ends_on_success: its episodes end on success, so an expert episode's last state is its goal state
        (demos.positive_states=last_if_terminal needs no LLM call there).
    """

    representations: tuple[str, ...] | None
    frames: bool | None
    success_flag: bool
    reference_reward: bool
    scripted_expert: bool
    jax_env: bool = False
    ends_on_success: bool = False


@dataclass(frozen=True)
class Suite(Component):
    """An environment suite: `fn(task, env_cfg) -> TaskAdapter`, and what it offers (checked when a config loads).

    :param scripted_expert: its adapters have expert_policy() (scripted-expert demonstrations).
    :param backends: the simulator backends env.backend may name (empty: one simulator).
    :param provides: when set, {"representations": env representations it offers, "frames": renders frames}.
    :param success_flag: its benchmark defines task success (a flag its score counts: Meta-World); Gym MuJoCo v5 and
        Brax define none (their scores are physical quantities), so feedback never prints a success line there.
    :param task_names: `task -> canonical name`, a ValueError naming the available tasks for an unknown one.
    :param task_offers: per-task offers (a suite whose tasks differ: the gym suite's task files), else the above.
    :param jax_env: its envs run in JAX (Brax).
    :param ends_on_success: its episodes end on success (BabyAI).
    :param tasks: `() -> names` of every task the suite holds (the catalogue, `python -m bird.envs list`); None where
        its tasks are files found on the config search path (the gym suite).
    """

    scripted_expert: bool = False
    backends: tuple[str, ...] = ()
    provides: Mapping[str, Any] | None = None
    success_flag: bool = False
    task_names: Callable[[str], str] | None = None
    task_offers: Callable[[EnvConfig], TaskOffers] | None = None
    jax_env: bool = False
    tasks: Callable[[], tuple[str, ...]] | None = None
    ends_on_success: bool = False

    def suite_offers(self) -> TaskOffers | None:
        """What every task of the suite offers (None when each task says, `task_offers`)."""
        if self.task_offers is not None:
            return None
        provides = self.provides or {}
        return TaskOffers(provides.get("representations"), provides.get("frames"), self.success_flag,
                          reference_reward=True, scripted_expert=self.scripted_expert, jax_env=self.jax_env,
                          ends_on_success=self.ends_on_success)

    def offers(self, env: EnvConfig) -> TaskOffers:
        """What the task `env` names offers; a ValueError naming the available tasks when the suite has no such one."""
        task = split_env_id(env.id)[1]
        if self.task_names is not None:
            self.task_names(task)
        fixed = self.suite_offers()
        return fixed if fixed is not None else self.task_offers(env)  # type: ignore[misc]


def split_env_id(env_id: str) -> tuple[str, str]:
    suite, sep, task = env_id.partition("/")
    if not sep or not suite or not task:
        raise ValueError(f"env.id must look like '<suite>/<task>', got {env_id!r}")
    return suite, task


def ends_on_success(cfg: EnvConfig) -> bool:
    """Whether the task `cfg` names ends its episodes on success (an expert episode's last state is its goal state);
    False for a task its suite does not have (refused when the config loads)."""
    try:
        return get("suite", split_env_id(cfg.id)[0]).offers(cfg).ends_on_success
    except ValueError:
        return False


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


def _known(suite: str, tasks: Callable[[], Mapping[str, Any]]) -> Callable[[str], str]:
    def check(task: str) -> str:
        if task not in tasks():
            raise ValueError(f"unknown {suite} task {task!r}; available: {sorted(tasks())}")
        return task

    return check


def _mujoco_tasks() -> Mapping[str, Any]:
    from bird.envs.mujoco.tasks import TASKS

    return TASKS


def _brax_tasks() -> Mapping[str, Any]:
    from bird.envs.brax.tasks import TASKS

    return TASKS


def _metaworld_task(task: str) -> str:
    from bird.envs.metaworld.tasks import canonical_task

    return canonical_task(task)


def _metaworld_names() -> tuple[str, ...]:
    from bird.envs.metaworld.tasks import task_names

    return task_names()


# the views every adapter suite's tasks serve: the env module's code (reward code removed), its observation code, the
# index, and a class abstraction built from the index (Meta-World adds its own abstraction)
_ADAPTER_VIEWS = ("full_source", "obs_code", "obs_index", "class_abstraction")

register("suite", "mujoco")(Suite(_mujoco, task_names=_known("mujoco", _mujoco_tasks),
                                  tasks=lambda: tuple(sorted(_mujoco_tasks())),
                                  provides={"representations": _ADAPTER_VIEWS, "frames": True}))
register("suite", "metaworld")(Suite(_metaworld, scripted_expert=True, success_flag=True, task_names=_metaworld_task,
                                     tasks=_metaworld_names,
                                     provides={"representations": (*_ADAPTER_VIEWS, "abstraction"), "frames": True}))


def suite_defines_success(suite: str) -> bool:
    """True when `suite`'s benchmark defines a success flag (False for an unknown suite)."""
    return suite in names("suite") and get("suite", suite).success_flag


# hidden facts of a task (bird/leaks.py): (names of its reference reward and success check, success thresholds), read
# from the task's name, or from its config where the task is a file (the gym suite)
@register("hidden_facts", "mujoco")
def _mujoco_hidden(task: str, env: EnvConfig | None = None) -> tuple[frozenset[str], tuple[float, ...]]:
    """Gymnasium's reward names; no thresholds: Gym MuJoCo v5 has no success check (the score is a physical quantity)."""
    import gymnasium as gym

    from bird.envs.mujoco.source import hidden_names
    from bird.envs.mujoco.tasks import TASKS

    return hidden_names(type(gym.make(TASKS[task].gym_id).unwrapped)), ()


@register("hidden_facts", "metaworld")
def _metaworld_hidden(task: str, env: EnvConfig | None = None) -> tuple[frozenset[str], tuple[float, ...]]:
    """Meta-World's reward and success code names, and the numbers evaluate_state's success compares against."""
    from bird.envs.metaworld.source import hidden_names, success_thresholds
    from bird.envs.metaworld.tasks import TASKS, canonical_task

    mw_name = TASKS[canonical_task(task)].mw_name
    return hidden_names(mw_name), success_thresholds(mw_name)


@register("hidden_facts", "brax")
def _brax_hidden(task: str, env: EnvConfig | None = None) -> tuple[frozenset[str], tuple[float, ...]]:
    """The reward names of the brax env's module (its reward terms and metrics); no thresholds: no success check."""
    from bird.envs.brax.adapter import brax_env
    from bird.envs.brax.tasks import TASKS
    from bird.envs.mujoco.source import hidden_names

    defn = TASKS[task]
    return hidden_names(type(brax_env(defn.brax_name, defn.default_backend))), ()


@register("hidden_facts", "gym")
def _gym_hidden(task: str, env: EnvConfig | None = None) -> tuple[frozenset[str], tuple[float, ...]]:
    """What the task file hides (hidden.names, hidden.thresholds, source.remove, its score, success and reference
    functions) and the reward names of the env's module; `env` None reads env/gym/<task>.yaml on the search path."""
    from bird.config.searchpath import find
    from bird.envs.gym.adapter import env_class
    from bird.envs.gym.source import task_hidden_names
    from bird.envs.gym.taskfile import read_env_file

    if env is None or env.task is None:
        path = find("env", f"gym/{task}")
        if path is None:
            raise ValueError(f"no task file env/gym/{task}.yaml on the config search path")
        env = read_env_file(path)
    assert env.task is not None
    return task_hidden_names(env.task, env_class(env.task)), tuple(env.task.hidden.thresholds)


def _brax(task: str, cfg: EnvConfig) -> TaskAdapter:
    from bird.envs.brax import make_task

    return make_task(task, cfg)


register("suite", "brax")(Suite(_brax, backends=("generalized", "positional", "spring", "mjx"),
                               task_names=_known("brax", _brax_tasks), jax_env=True,
                               tasks=lambda: tuple(sorted(_brax_tasks())),
                               provides={"representations": ("full_source", "obs_code", "obs_index"), "frames": False}))


def _babyai(task: str, cfg: EnvConfig) -> TaskAdapter:
    from bird.envs.babyai import make_task

    return make_task(task, cfg)


def _babyai_tasks() -> Mapping[str, Any]:
    from bird.envs.babyai.levels import LEVELS

    return LEVELS


# its own adapter, not task files: the bot plans from the simulator's state (demos.enabled), the actions are discrete,
# and the grid is a shaped field (docs/babyai.md)
register("suite", "babyai")(Suite(_babyai, scripted_expert=True, success_flag=True, ends_on_success=True,
                                  task_names=_known("babyai", _babyai_tasks),
                                  provides={"representations": _ADAPTER_VIEWS, "frames": True}))


@register("hidden_facts", "babyai")
def _babyai_hidden(task: str, env: EnvConfig | None = None) -> tuple[frozenset[str], tuple[float, ...]]:
    """BabyAI's reward and verifier names (the level's success check); no thresholds: success is symbolic."""
    from bird.envs.babyai.source import hidden_names

    return hidden_names(), ()


def _gym(task: str, cfg: EnvConfig) -> TaskAdapter:
    from bird.envs.gym import make_task

    return make_task(task, cfg)


def _gym_offers(env: EnvConfig) -> TaskOffers:
    """A task file's offers, read from the file: its source views, frames where the env class has an rgb_array mode
    (its class is imported, not built), its success flag, reference reward and scripted expert (env.task.expert)."""
    from bird.envs.gym.adapter import env_class
    from bird.envs.gym.taskfile import has_reference, problems, representations

    found = problems(env)
    if found:
        raise ValueError("\n  - ".join(found))
    assert env.task is not None
    modes = getattr(env_class(env.task), "metadata", {}).get("render_modes", ())
    return TaskOffers(representations(env.task), "rgb_array" in modes, env.task.success is not None,
                      has_reference(env.task), scripted_expert=env.task.expert is not None)


register("suite", "gym")(Suite(_gym, task_offers=_gym_offers))
