"""Feedback: fitness (what ranks candidates) and the text + statistics the generator will be shown."""

from __future__ import annotations

from dataclasses import replace

from bird.components.demos import score_candidate
from bird.components.fitness import Evidence, resolve_fitness
from bird.components.judgement import judge_candidate
from bird.components.self_verify import self_verify
from bird.components.summary import summarise
from bird.components.thought import align_thoughts
from bird.config.needs import needs_judgement
from bird.config.schema import BirdConfig
from bird.registry import get
from bird.state import SearchState
from bird.types import Candidate, Report, TrainResult

__all__ = ["feedback"]


def _evidence(cfg: BirdConfig, state: SearchState, cand: Candidate, res: TrainResult) -> Evidence | None:
    """The candidate's evidence; scores the demonstrations first when the search has them (None: it failed)."""
    demo = demo_test = None
    if state.demos is not None:
        demo, demo_test = score_candidate(cfg, state, cand)
        if demo is None:
            return None
    judgement = None
    if needs_judgement(cfg):
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
    align_thoughts(cfg, state, cands, reports)
    if cfg.feedback.self_verify:
        self_verify(cfg, state, cands, reports)
    return reports
