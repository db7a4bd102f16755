"""What a configuration needs beyond generation: judge scores of each trained candidate (`needs_judgement`), and a
judge, the evaluator role of judge.* (`needs_judge`), built only when some configured component makes judge calls.
Components declare it by attribute (`needs_judgement` / `needs_judge` on the registered object); flags are listed."""

from __future__ import annotations

from bird.config.schema import BirdConfig
from bird.registry import get

__all__ = ["needs_judge", "needs_judgement", "collect_episodes"]

# config key -> registry family, for components that may declare `needs_judge` / `needs_judgement`
_COMPONENT_KEYS = {"feedback.format": "feedback_format", "feedback.fitness": "fitness",
                   "feedback.summarisation": "summarisation"}
# flags whose passes need judge scores / call the judge
_JUDGEMENT_FLAGS = ("generate.behavioural_analysis",)
_JUDGE_FLAGS = ("feedback.thought_alignment", "feedback.self_verify")


def _get(cfg: object, dotted: str) -> object:
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg


def _declared(cfg: BirdConfig, attr: str) -> bool:
    return any(getattr(get(family, _get(cfg, key)), attr, False) for key, family in _COMPONENT_KEYS.items())


def needs_judgement(cfg: BirdConfig) -> bool:
    """True when judge scores per subtask are computed for every trained candidate."""
    return _declared(cfg, "needs_judgement") or any(bool(_get(cfg, f)) for f in _JUDGEMENT_FLAGS)


def needs_judge(cfg: BirdConfig) -> bool:
    """True when any configured component or flag makes judge calls."""
    return needs_judgement(cfg) or _declared(cfg, "needs_judge") or any(bool(_get(cfg, f)) for f in _JUDGE_FLAGS)


def collect_episodes(cfg: BirdConfig) -> int:
    """Rollouts to collect after each training: train.collect_episodes, raised to judge.rollouts when judged."""
    return max(cfg.train.collect_episodes, cfg.judge.rollouts if needs_judgement(cfg) else 0)
