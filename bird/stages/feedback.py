"""Feedback: fitness (what ranks candidates) and the text + statistics the generator will be shown."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from bird.config.schema import BirdConfig
from bird.prompts import templates
from bird.registry import get, register
from bird.state import SearchState
from bird.types import Candidate, Checkpoint, Report, TrainResult

__all__ = ["feedback", "subsample", "Evidence", "NATIVE_SIGNAL", "resolve_fitness", "reference_returns", "shown_scores",
           "SHOWN_SCORES"]


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


@register("fitness", "reference_return")
def _reference(ev: Evidence) -> float | None:
    vals = reference_returns(ev.curve)
    if all(math.isnan(v) for v in vals):
        return None
    value = get("aggregate", ev.aggregate)(vals, ev.shipped)
    return None if math.isnan(value) else value


@register("fitness", "none")
def _none(ev: Evidence) -> float | None:
    return None


# suite -> the fitness that is its native ranking signal (BIRD Table 8 note b: the reference reward's return, except
# on Meta-World, which ships a success flag and ranks on it; there it coincides with the benchmark score)
NATIVE_SIGNAL: dict[str, str] = {"mujoco": "reference_return", "brax": "reference_return",
                                 "metaworld": "benchmark_score"}


def _native_signal(suite: str) -> str:
    if suite not in NATIVE_SIGNAL:
        raise ValueError(f"feedback.fitness=native has no native signal for suite {suite!r}; "
                         f"known: {sorted(NATIVE_SIGNAL)} (set feedback.fitness explicitly)")
    return NATIVE_SIGNAL[suite]


@register("fitness", "native")
def _native(ev: Evidence) -> float | None:
    """The suite's native signal: reference-reward return (mujoco, brax) or the success-flag score (metaworld)."""
    return get("fitness", _native_signal(ev.suite))(ev)


_native.resolve = _native_signal  # type: ignore[attr-defined]


def resolve_fitness(name: str, suite: str) -> str:
    """The fitness that actually ranks on `suite`: a suite-aware one (attribute `resolve`) names its signal."""
    fn = get("fitness", name)
    return fn.resolve(suite) if hasattr(fn, "resolve") else name


# what the feedback's task_score line may show (feedback.score_shown), per checkpoint
SHOWN_SCORES = {"benchmark_score": lambda curve: [c.score for c in curve], "reference_return": reference_returns}


def shown_scores(cfg: BirdConfig, suite: str, curve: Sequence[Checkpoint]) -> list[float]:
    """The task_score values of `curve` (feedback.score_shown; native = the suite's native signal, as BIRD's matched
    runs verbalise the signal they rank on: safety-research/bird@54a9ce3:bird/components/evaluation.py
    `_section_numeric`)."""
    name = resolve_fitness(cfg.feedback.score_shown, suite)
    if name not in SHOWN_SCORES:
        raise ValueError(f"feedback.score_shown={cfg.feedback.score_shown!r} resolves to {name!r} on {suite!r}; "
                         f"allowed: {sorted(SHOWN_SCORES)} or native")
    return SHOWN_SCORES[name](curve)


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
def _eureka(cfg: BirdConfig, state: SearchState, cand: Candidate, res: TrainResult | None) -> tuple[str, dict]:
    """Per-component curves with Max/Mean/Min, plus task_score (when shown) and episode length."""
    curve = res.curve if res is not None else ()
    if not curve:
        return "The reward was not used to train a policy.", {}
    idx = subsample(len(curve), cfg.feedback.curve_points)
    pts = [curve[i] for i in idx]
    stats: dict = {"components": {}, "episode_length": [c.episode_length for c in pts]}
    for name in sorted({k for c in pts for k in c.components}):
        stats["components"][name] = [c.components.get(name, float("nan")) for c in pts]
    if cfg.feedback.show_score:
        stats["task_score"] = shown_scores(cfg, state.spec.suite, pts)
    lines = [_line(n, v) for n, v in stats["components"].items()]
    if "task_score" in stats:
        lines.append(_line("task_score", stats["task_score"]))
    lines.append(_line("episode_length", stats["episode_length"]))
    every = pts[1].env_steps - pts[0].env_steps if len(pts) > 1 else pts[0].env_steps
    text = templates(cfg.generate.prompt)["policy_feedback"].format(epoch_freq=every, feedback_lines="\n".join(lines))
    return text, stats


def _evidence(cfg: BirdConfig, state: SearchState, cand: Candidate, res: TrainResult) -> Evidence | None:
    """The candidate's evidence; scores the demonstrations first when the search has them (None: it failed)."""
    demo = demo_test = None
    if state.demos is not None:
        from bird.components.demos import score_candidate

        demo, demo_test = score_candidate(cfg, state, cand)
        if demo is None:
            return None
    from bird.components.roles import needs_judgement

    judgement = None
    if needs_judgement(cfg):
        from bird.components.judgement import judge_candidate

        judgement = judge_candidate(cfg, state, cand, res)
    return Evidence(res.curve, cfg.feedback.aggregate, demo, demo_test, state.spec.suite, res.shipped, judgement)


def _metrics(cfg: BirdConfig, ev: Evidence) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for name in dict.fromkeys([cfg.feedback.fitness, *cfg.feedback.report_metrics]):
        out[name] = get("fitness", name)(ev)
        if ev.demo_test is not None and name.startswith("demo_"):
            out[f"{name}_test"] = get("fitness", name)(replace(ev, demo=ev.demo_test))
    return out


def feedback(cfg: BirdConfig, state: SearchState, cands: list[Candidate],
             results: dict[str, TrainResult]) -> dict[str, Report]:
    """A report per trained (or, with learner none, verified) candidate, and per screened candidate when
    feedback.screened_format names a format; failed candidates get none."""
    from bird.components.summary import summarise

    reports: dict[str, Report] = {}
    for cand in cands:
        if cand.screened and cfg.feedback.screened_format:
            text, stats = get("feedback_format", cfg.feedback.screened_format)(cfg, state, cand, None)
            reports[cand.id] = Report(cand.id, None, text, stats)
            continue
        res = results.get(cand.id)
        if res is None or res.failure is not None or not cand.alive:
            continue
        ev = _evidence(cfg, state, cand, res)
        if ev is None:
            continue
        metrics = _metrics(cfg, ev)
        text, stats = summarise(cfg, state, cand, *get("feedback_format", cfg.feedback.format)(cfg, state, cand, res))
        if len(metrics) > 1 or state.demos is not None:
            stats = {**stats, "metrics": metrics}
        reports[cand.id] = Report(cand.id, metrics[cfg.feedback.fitness], text, stats,
                                  resolve_fitness(cfg.feedback.fitness, state.spec.suite))
    from bird.components.thought import align_thoughts

    align_thoughts(cfg, state, cands, reports)
    if cfg.feedback.self_verify:
        from bird.components.self_verify import self_verify

        self_verify(cfg, state, cands, reports)
    return reports
