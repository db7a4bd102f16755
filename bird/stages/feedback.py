"""Feedback: fitness (what ranks candidates) and the text + statistics the generator will be shown."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from bird.config.schema import BirdConfig
from bird.prompts import templates
from bird.registry import get, register
from bird.state import SearchState
from bird.types import Candidate, Checkpoint, Report, TrainResult

__all__ = ["feedback", "subsample"]


@register("aggregate", "max")
def _max(values: Sequence[float]) -> float:
    return float(np.nanmax(values))


@register("aggregate", "final")
def _final(values: Sequence[float]) -> float:
    return float(values[-1])


@register("aggregate", "mean")
def _mean(values: Sequence[float]) -> float:
    return float(np.nanmean(values))


@register("fitness", "benchmark_score")
def _benchmark(curve: Sequence[Checkpoint], aggregate: str) -> float | None:
    return get("aggregate", aggregate)([c.score for c in curve])


@register("fitness", "reference_return")
def _reference(curve: Sequence[Checkpoint], aggregate: str) -> float | None:
    vals = [c.reference_return for c in curve if not math.isnan(c.reference_return)]
    return get("aggregate", aggregate)(vals) if vals else None


@register("fitness", "none")
def _none(curve: Sequence[Checkpoint], aggregate: str) -> float | None:
    return None


def subsample(n: int, points: int) -> list[int]:
    """Indices of at most `points` evenly spaced checkpoints, always including the last."""
    if n <= points:
        return list(range(n))
    return sorted({round(i * (n - 1) / (points - 1)) for i in range(points)})


def _line(name: str, values: list[float]) -> str:
    vals = [v for v in values if not math.isnan(v)]
    if not vals:
        return f"{name}: no completed episodes"
    shown = ", ".join(f"{v:.2f}" for v in values)
    return f"{name}: [{shown}], Max: {max(vals):.2f}, Mean: {sum(vals) / len(vals):.2f}, Min: {min(vals):.2f}"


@register("feedback_format", "eureka")
def _eureka(cfg: BirdConfig, curve: Sequence[Checkpoint]) -> tuple[str, dict]:
    """Per-component curves with Max/Mean/Min, plus task_score (when shown) and episode length."""
    idx = subsample(len(curve), cfg.feedback.curve_points)
    pts = [curve[i] for i in idx]
    stats: dict = {"components": {}, "episode_length": [c.episode_length for c in pts]}
    for name in sorted({k for c in pts for k in c.components}):
        stats["components"][name] = [c.components.get(name, float("nan")) for c in pts]
    if cfg.feedback.show_score:
        stats["task_score"] = [c.score for c in pts]
    lines = [_line(n, v) for n, v in stats["components"].items()]
    if "task_score" in stats:
        lines.append(_line("task_score", stats["task_score"]))
    lines.append(_line("episode_length", stats["episode_length"]))
    every = pts[1].env_steps - pts[0].env_steps if len(pts) > 1 else pts[0].env_steps
    text = templates(cfg.generate.prompt)["policy_feedback"].format(epoch_freq=every, feedback_lines="\n".join(lines))
    return text, stats


def feedback(cfg: BirdConfig, state: SearchState, cands: list[Candidate],
             results: dict[str, TrainResult]) -> dict[str, Report]:
    """A report per trained candidate; failed candidates get no fitness."""
    reports: dict[str, Report] = {}
    for cand in cands:
        res = results.get(cand.id)
        if res is None or not res.ok or not cand.alive:
            continue
        fitness = get("fitness", cfg.feedback.fitness)(res.curve, cfg.feedback.aggregate)
        text, stats = get("feedback_format", cfg.feedback.format)(cfg, res.curve)
        reports[cand.id] = Report(cand.id, fitness, text, stats)
    return reports
