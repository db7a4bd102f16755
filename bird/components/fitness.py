"""Fitness: what ranks candidates (registry family `fitness`), read from a candidate's Evidence, and how a curve of
checkpoint values becomes one number (family `aggregate`)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bird.registry import declared, get, register
from bird.types import Checkpoint

__all__ = ["Evidence", "NATIVE_SIGNAL", "resolve_fitness", "subsample", "aggregate_score", "reference_returns",
           "shown_scores", "SHOWN_SCORES"]


@register("aggregate", "max")
def _max(values: Sequence[float], shipped: int = -1) -> float:
    return float(np.nanmax(values))


@register("aggregate", "final")
def _final(values: Sequence[float], shipped: int = -1) -> float:
    """The shipped checkpoint's value (the last one unless train.checkpoint_selection kept another)."""
    return float(values[shipped])


@register("aggregate", "mean")
def _mean(values: Sequence[float], shipped: int = -1) -> float:
    return float(np.nanmean(values))


@dataclass(frozen=True)
class Evidence:
    """What fitness components may read about one candidate."""

    curve: Sequence[Checkpoint]  # empty when the candidate trained no policy
    aggregate: str
    demo: Any = None  # DemoScores on the demonstrations' train split, when the search has demos
    demo_test: Any = None  # ... and on the held-out split
    suite: str = ""  # the task's suite (fitness.native resolves per suite)
    shipped: int = -1  # index of the shipped checkpoint in `curve` (train.checkpoint_selection)
    judgement: dict[str, Any] | None = None  # judge scores per subtask, when the config needs them


@register("fitness", "benchmark_score")
def _benchmark(ev: Evidence) -> float | None:
    return get("aggregate", ev.aggregate)([c.score for c in ev.curve], ev.shipped) if ev.curve else None


def reference_returns(curve: Sequence[Checkpoint]) -> list[float]:
    """The shipped reward's return per checkpoint: on the greedy evaluation episodes where the learner measured it
    (as BIRD's release records gt_return, safety-research/bird@54a9ce3:bird/components/training.py), else on the
    training episodes of the window before the checkpoint."""
    if any(not math.isnan(c.eval_reference_return) for c in curve):
        return [c.eval_reference_return for c in curve]
    return [c.reference_return for c in curve]


@register("fitness", "reference_return", needs_task=("reference_reward",))
def _reference(ev: Evidence) -> float | None:
    vals = reference_returns(ev.curve)
    if all(math.isnan(v) for v in vals):
        return None
    value = get("aggregate", ev.aggregate)(vals, ev.shipped)
    return None if math.isnan(value) else value


@register("fitness", "none", needs_policy=False)
def _none(ev: Evidence) -> float | None:
    return None


# suite -> the fitness that is its native ranking signal (BIRD Table 8 note b: the reference reward's return, except
# on Meta-World, which ships a success flag and ranks on it; there it coincides with the benchmark score)
NATIVE_SIGNAL: dict[str, str] = {"mujoco": "reference_return", "brax": "reference_return",
                                 "metaworld": "benchmark_score", "gym": "reference_return",
                                 "babyai": "benchmark_score"}  # BabyAI: the success rate, as GRACE reports


def _native_signal(suite: str) -> str:
    if suite not in NATIVE_SIGNAL:
        raise ValueError(f"native: no native signal for suite {suite!r}; known: {sorted(NATIVE_SIGNAL)} "
                         "(name the signal instead: benchmark_score or reference_return)")
    return NATIVE_SIGNAL[suite]


@register("fitness", "native", resolve=_native_signal)
def _native(ev: Evidence) -> float | None:
    """The suite's native signal: reference-reward return (mujoco, brax) or the success-flag score (metaworld)."""
    return get("fitness", _native_signal(ev.suite))(ev)


def resolve_fitness(name: str, suite: str) -> str:
    """The fitness that actually ranks on `suite`: a suite-aware one (attribute `resolve`) names its signal."""
    resolve = declared("fitness", name).resolve
    return resolve(suite) if resolve is not None else name


# what the feedback's task_score line may show (feedback.score_shown), per checkpoint
SHOWN_SCORES = {"benchmark_score": lambda curve: [c.score for c in curve], "reference_return": reference_returns}


def shown_scores(score_shown: str, suite: str, curve: Sequence[Checkpoint]) -> list[float]:
    """The task_score values of `curve` (feedback.score_shown; native = the suite's native signal, as BIRD's matched
    runs verbalise the signal they rank on: safety-research/bird@54a9ce3:bird/components/evaluation.py
    `_section_numeric`)."""
    name = resolve_fitness(score_shown, suite)
    if name not in SHOWN_SCORES:
        raise ValueError(f"feedback.score_shown={score_shown!r} resolves to {name!r} on {suite!r}; "
                         f"allowed: {sorted(SHOWN_SCORES)} or native")
    return SHOWN_SCORES[name](curve)


def subsample(n: int, points: int) -> list[int]:
    """Indices of at most `points` evenly spaced checkpoints, always including the last."""
    if n <= points:
        return list(range(n))
    return sorted({round(i * (n - 1) / (points - 1)) for i in range(points)})


def aggregate_score(aggregate: str, res: Any) -> float | None:
    """A training's benchmark score, aggregated over its checkpoints by `aggregate` (None for a failed training)."""
    if res is None or not res.ok:
        return None
    return get("aggregate", aggregate)([c.score for c in res.curve], res.shipped)
