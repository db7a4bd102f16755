"""Env representations for prompts (registry family env_representation) that a suite supplies in TaskSpec.extra:
full_source (Meta-World, Gym MuJoCo) and abstraction (Meta-World)."""

from __future__ import annotations

from bird.envs.base import TaskSpec
from bird.registry import register

__all__ = ["full_source", "abstraction"]


def _extra(spec: TaskSpec, key: str, name: str) -> str:
    text = spec.extra.get(key)
    if not text:
        raise ValueError(
            f"env_representation {name!r} is not available for suite {spec.suite} ({spec.env_id}); "
            "use 'obs_code' or 'obs_index'"
        )
    return text


@register("env_representation", "full_source")
def full_source(spec: TaskSpec) -> str:
    """The task env's full source with the reward and success code removed (BIRD Table 9 "full source")."""
    return _extra(spec, "full_source", "full_source")


@register("env_representation", "abstraction")
def abstraction(spec: TaskSpec) -> str:
    """A Pythonic class abstraction of the task's state (Text2Reward / CARD style)."""
    return _extra(spec, "abstraction", "abstraction")
