"""Suite registry: `env.id = "<suite>/<task>"` picks a suite factory; suite modules import lazily."""

from __future__ import annotations

from bird.config.schema import EnvConfig
from bird.envs.base import TaskAdapter
from bird.registry import get, register

__all__ = ["make_adapter", "split_env_id"]


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


@register("suite", "brax")
def _brax(task: str, cfg: EnvConfig) -> TaskAdapter:
    from bird.envs.brax import make_task

    return make_task(task, cfg)


_brax.backends = ("generalized", "positional", "spring", "mjx")  # type: ignore[attr-defined]
# what the suite offers the methods (checked when the config loads: bird/config/validate.py)
_brax.provides = {"representations": ("obs_code", "obs_index"),  # type: ignore[attr-defined]
                  "scripted_demos": False, "frames": False}
