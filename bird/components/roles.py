"""Which LLM roles a configuration needs: a judge (the evaluator role, judge.*) is built only when a component the
config names asks for one (attribute `needs_judge` on a registered component, or a flag that runs judge calls)."""

from __future__ import annotations

from bird.config.schema import BirdConfig
from bird.registry import get

__all__ = ["needs_judge"]

# config key -> registry family, for components that may declare `needs_judge = True`
_COMPONENT_KEYS = {"feedback.format": "feedback_format", "feedback.fitness": "fitness"}
# flags whose passes call the judge
_FLAGS = ("feedback.thought_alignment", "feedback.self_verify")


def _get(cfg: object, dotted: str) -> object:
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg


def needs_judge(cfg: BirdConfig) -> bool:
    """True when any configured component or flag makes judge calls."""
    if any(getattr(get(family, _get(cfg, key)), "needs_judge", False) for key, family in _COMPONENT_KEYS.items()):
        return True
    return any(bool(_get(cfg, flag)) for flag in _FLAGS)
