"""Suite registry: `env.id = "<suite>/<task>"` picks a suite factory; suite modules import lazily."""

from __future__ import annotations

from bird.config.schema import EnvConfig
from bird.envs.base import TaskAdapter
from bird.registry import get, names, register

__all__ = ["make_adapter", "split_env_id", "suite_defines_success"]


def split_env_id(env_id: str) -> tuple[str, str]:
    suite, sep, task = env_id.partition("/")
    if not sep or not suite or not task:
        raise ValueError(f"env.id must look like '<suite>/<task>', got {env_id!r}")
    return suite, task


def make_adapter(cfg: EnvConfig) -> TaskAdapter:
    """Build the TaskAdapter that `cfg.id` names."""
    suite, task = split_env_id(cfg.id)
    return get("suite", suite)(task, cfg)


@register("suite", "mujoco")
def _mujoco(task: str, cfg: EnvConfig) -> TaskAdapter:
    from bird.envs.mujoco import make_task

    return make_task(task, cfg)


@register("suite", "metaworld")
def _metaworld(task: str, cfg: EnvConfig) -> TaskAdapter:
    from bird.envs.metaworld import make_task

    return make_task(task, cfg)


# whether the suite's adapters have expert_policy() (scripted-expert demonstrations): checked at config validation
_mujoco.scripted_expert = False  # type: ignore[attr-defined]
_metaworld.scripted_expert = True  # type: ignore[attr-defined]
# whether the suite defines task success (a flag its benchmark score counts): Meta-World's success flag; Gym MuJoCo v5
# and Brax define none (their scores are physical quantities), so feedback never prints a success line there
_mujoco.success_flag = False  # type: ignore[attr-defined]
_metaworld.success_flag = True  # type: ignore[attr-defined]


def suite_defines_success(suite: str) -> bool:
    """True when `suite`'s benchmark defines a success flag (False for an unknown suite)."""
    return suite in names("suite") and bool(getattr(get("suite", suite), "success_flag", False))


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


@register("suite", "brax")
def _brax(task: str, cfg: EnvConfig) -> TaskAdapter:
    from bird.envs.brax import make_task

    return make_task(task, cfg)


_brax.backends = ("generalized", "positional", "spring", "mjx")  # type: ignore[attr-defined]
# what the suite offers the methods (checked when the config loads: bird/config/validate.py)
_brax.provides = {"representations": ("full_source", "obs_code", "obs_index"),  # type: ignore[attr-defined]
                  "frames": False}
_brax.scripted_expert = False  # type: ignore[attr-defined]
_brax.success_flag = False  # type: ignore[attr-defined]
