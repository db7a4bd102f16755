"""What a configuration needs beyond generation: judge scores of each trained candidate (`needs_judgement`), and a
judge, the evaluator role of judge.* (`needs_judge`), built only when some configured component makes judge calls.
Components declare it when they register (bird/registry.py Component); flags are listed here."""

from __future__ import annotations

from bird import registry
from bird.config.schema import BirdConfig

__all__ = ["needs_judge", "needs_judgement", "collect_episodes", "configured", "reads_policy"]

# flags whose passes need judge scores / call the judge
_JUDGEMENT_FLAGS = ("generate.behavioural_analysis",)
_JUDGE_FLAGS = ("feedback.thought_alignment", "feedback.self_verify")


def _get(cfg: object, dotted: str) -> object:
    for part in dotted.split("."):
        cfg = getattr(cfg, part)
    return cfg


def configured(cfg: BirdConfig) -> list[registry.Component]:
    """The declarations of every component the config names (single, optional and list keys of every family)."""
    out = []
    for kind in ("keys", "optional_keys", "list_keys"):
        for key, family in registry.config_keys(kind).items():
            value = _get(cfg, key)
            values = [] if value is None else [value] if isinstance(value, str) else list(value)  # type: ignore[call-overload]
            out += [registry.declared(family, v) for v in values]
    return out


def needs_judgement(cfg: BirdConfig) -> bool:
    """True when judge scores per subtask are computed for every trained candidate."""
    return any(c.needs_judgement for c in configured(cfg)) or any(bool(_get(cfg, f)) for f in _JUDGEMENT_FLAGS)


def needs_judge(cfg: BirdConfig) -> bool:
    """True when any configured component or flag makes judge calls."""
    return (needs_judgement(cfg) or any(c.needs_judge for c in configured(cfg))
            or any(bool(_get(cfg, f)) for f in _JUDGE_FLAGS))


def collect_episodes(cfg: BirdConfig) -> int:
    """Rollouts to collect after each training: train.collect_episodes, raised to judge.rollouts when judged."""
    return max(cfg.train.collect_episodes, cfg.judge.rollouts if needs_judgement(cfg) else 0)


def reads_policy(cfg: BirdConfig) -> bool:
    """True when something the loop ranks, reports or shows reads a trained policy: the fitness, a report metric or
    the feedback format (each declares `needs_policy`; GRACE's demo fitness and misscored-demos feedback do not, nor
    the oracle's none), or a judge's scores of the rollouts. False: the loop trains nothing."""
    used = [registry.declared("fitness", n) for n in (cfg.feedback.fitness, *cfg.feedback.report_metrics)
            if n in registry.names("fitness")]
    if cfg.feedback.format in registry.names("feedback_format"):
        used.append(registry.declared("feedback_format", cfg.feedback.format))
    return any(c.needs_policy for c in used) or needs_judgement(cfg)
