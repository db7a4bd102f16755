"""Agreement statistics of a rating study, as BIRD reports them (Tables 2, 12, 13).

- Reliability (Table 12): within rater (a clip's first showing vs its unannounced repeat) and between raters (the
  first showings of clips two raters both saw): pairs, exact match, mean gap in scale steps, Krippendorff's α with
  the ordinal metric (the `krippendorff` package) and Spearman's ρ, each with a 95% percentile bootstrap interval
  over 2,000 resamples (units: rater × clip for within, clips for between).
- Human vs benchmark (Table 13): per domain (suite), Spearman's ρ between a clip's mean completion rating and the
  benchmark score of the filmed episode, with a 95% percentile bootstrap over 2,000 resamples of tasks (of clips
  when a domain has fewer than 3 tasks, flagged, as BIRD does for HumanoidBench); plus all domains pooled and a
  pooled naturalness row.
Input: the tidy rows of `python -m bird.annotate export` (or the study database itself).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

__all__ = ["load_ratings", "krippendorff_alpha", "spearman", "reliability", "human_vs_benchmark", "agreement_report",
           "AgreementReport"]

QUESTIONS = ("completion", "naturalness")
MIN_TASKS_TO_RESAMPLE = 3


def load_ratings(source: str | Path) -> pd.DataFrame:
    """Tidy rating rows from a study database (.sqlite/.db) or an exported CSV."""
    path = Path(source)
    if not path.is_file():
        raise FileNotFoundError(f"no such ratings file: {path}")
    if path.suffix.lower() == ".csv":
        df = pd.read_csv(path)
    else:
        from bird.annotate.study import Study

        df = pd.DataFrame(Study(path).rows())
    needed = {"rater", "clip_id", "is_repeat", "suite", "task", "benchmark_score", "completion", "naturalness",
              "scale_points"}
    missing = needed - set(df.columns)
    if missing:
        raise ValueError(f"{path}: missing columns {sorted(missing)}")
    return df


def krippendorff_alpha(data: np.ndarray, scale_points: int) -> float:
    """Krippendorff's α, ordinal metric, of a (coders × units) array with NaN for missing; NaN when undefined."""
    import krippendorff

    data = np.asarray(data, dtype=float)
    pairable = (np.sum(~np.isnan(data), axis=0) >= 2).sum()
    values = data[~np.isnan(data)]
    if pairable == 0 or len(np.unique(values)) < 2:
        return math.nan
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal",
                                    value_domain=list(range(1, scale_points + 1))))


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's ρ (ties get average ranks); NaN with fewer than 3 pairs or a constant side."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(spearmanr(x, y).statistic)


@dataclass
class Estimate:
    value: float
    low: float = math.nan
    high: float = math.nan

    def fmt(self, pct: bool = False) -> str:
        if math.isnan(self.value):
            return "–"
        f = (lambda v: f"{100 * v:.0f}%") if pct else (lambda v: f"{v:.2f}")
        return f"{f(self.value)} [{f(self.low)}, {f(self.high)}]" if not math.isnan(self.low) else f(self.value)


def _bootstrap(units: list[Any], stat: Callable[[list[Any]], float], n_resamples: int,
               rng: np.random.Generator) -> Estimate:
    """Point estimate and 95% percentile interval, resampling `units` with replacement (NaN resamples dropped)."""
    value = stat(units)
    if not units or math.isnan(value):
        return Estimate(value)
    draws = np.array([stat([units[i] for i in rng.integers(0, len(units), len(units))]) for _ in range(n_resamples)])
    draws = draws[~np.isnan(draws)]
    if len(draws) == 0:
        return Estimate(value)
    return Estimate(value, float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5)))


def _first_showings(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["is_repeat"].astype(int) == 0]


def _within_units(df: pd.DataFrame, q: str) -> list[list[tuple[float, float]]]:
    """One unit per (rater, clip) with a repeat: [(first, repeat), ...]."""
    units = []
    for _, g in df.dropna(subset=[q]).groupby(["rater", "clip_id"]):
        first, rep = g[g["is_repeat"].astype(int) == 0][q], g[g["is_repeat"].astype(int) == 1][q]
        if len(first) and len(rep):
            units.append([(float(first.iloc[0]), float(r)) for r in rep])
    return units


def _between_units(df: pd.DataFrame, q: str) -> list[dict[str, float]]:
    """One unit per clip rated by two or more raters: {rater: first-showing rating}."""
    units = []
    for _, g in _first_showings(df).dropna(subset=[q]).groupby("clip_id"):
        ratings = dict(zip(g["rater"].astype(str), g[q].astype(float), strict=True))
        if len(ratings) >= 2:
            units.append(ratings)
    return units


def _pairs_of(unit: Any) -> list[tuple[float, float]]:
    if isinstance(unit, list):
        return unit
    names = sorted(unit)
    return [(unit[a], unit[b]) for i, a in enumerate(names) for b in names[i + 1:]]


def _pair_stats(units: list[Any], scale: int, between: bool) -> dict[str, Callable[[list[Any]], float]]:
    def pairs(us: list[Any]) -> np.ndarray:
        return np.array([p for u in us for p in _pairs_of(u)], dtype=float).reshape(-1, 2)

    def alpha(us: list[Any]) -> float:
        if between:
            raters = sorted({r for u in us for r in u})
            data = np.array([[u.get(r, np.nan) for u in us] for r in raters], dtype=float)
        else:
            data = pairs(us).T
        return krippendorff_alpha(data, scale) if data.size else math.nan

    return {
        "exact match": lambda us: float(np.mean(pairs(us)[:, 0] == pairs(us)[:, 1])) if len(pairs(us)) else math.nan,
        "mean gap": lambda us: float(np.mean(np.abs(np.diff(pairs(us), axis=1)))) if len(pairs(us)) else math.nan,
        "alpha": alpha,
        "rho": lambda us: spearman(pairs(us)[:, 0], pairs(us)[:, 1]) if len(pairs(us)) else math.nan,
    }


def reliability(df: pd.DataFrame, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Table 12: one row per (comparison, question)."""
    scale = int(df["scale_points"].iloc[0]) if len(df) else 5
    rows = []
    for comparison, units_of in (("within rater", _within_units), ("between raters", _between_units)):
        for q in QUESTIONS:
            units = units_of(df, q)
            stats = _pair_stats(units, scale, comparison == "between raters")
            row: dict[str, Any] = {"comparison": comparison, "question": q,
                                   "pairs": sum(len(_pairs_of(u)) for u in units)}
            for name, fn in stats.items():
                row[name] = _bootstrap(units, fn, n_resamples, np.random.default_rng(seed))
            rows.append(row)
    return pd.DataFrame(rows)


def _rescaled_benchmark(clips: pd.DataFrame) -> pd.Series:
    """Scores already in [0, 1] stay; a task with scores outside is rescaled to score / (its best clip's score),
    clipped to [0, 1] (random policy 0, best clip 1, after BIRD Table 7's normalisation)."""
    out = clips["benchmark_score"].astype(float).copy()
    for _, idx in clips.groupby("task").groups.items():
        s = out.loc[idx]
        if s.min() < 0 or s.max() > 1:
            out.loc[idx] = (s / s.max()).clip(0, 1) if s.max() > 0 else 0.0
    return out


def _clip_table(df: pd.DataFrame) -> pd.DataFrame:
    """One row per clip: suite, task, benchmark score, mean completion and naturalness over raters' first showings."""
    first = _first_showings(df)
    clips = first.groupby("clip_id").agg(suite=("suite", "first"), task=("task", "first"),
                                         benchmark_score=("benchmark_score", "first"),
                                         completion=("completion", "mean"), naturalness=("naturalness", "mean"))
    clips = clips.dropna(subset=["benchmark_score"]).reset_index()
    clips["task"] = clips["suite"].astype(str) + "/" + clips["task"].astype(str)
    clips["benchmark_01"] = _rescaled_benchmark(clips)
    return clips


def _rho_row(label: str, clips: pd.DataFrame, q: str, scale: int, n_resamples: int, seed: int) -> dict[str, Any]:
    clips = clips.dropna(subset=[q])
    tasks = sorted(clips["task"].unique())
    by_task = [clips[clips["task"] == t] for t in tasks]
    resample_tasks = len(tasks) >= MIN_TASKS_TO_RESAMPLE
    units: list[Any] = by_task if resample_tasks else [r for _, r in clips.iterrows()]

    def rho(us: list[Any]) -> float:
        frame = pd.concat(us) if resample_tasks else pd.DataFrame(us)
        return spearman(frame[q], frame["benchmark_01"]) if len(frame) else math.nan

    return {"domain": label, "question": q, "clips": len(clips), "tasks": len(tasks),
            "mean benchmark": float(clips["benchmark_01"].mean()) if len(clips) else math.nan,
            "mean human": float(((clips[q] - 1) / (scale - 1)).mean()) if len(clips) else math.nan,
            "rho": _bootstrap(units, rho, n_resamples, np.random.default_rng(seed)),
            "resampled": "tasks" if resample_tasks else "clips (fewer than 3 tasks)"}


def human_vs_benchmark(df: pd.DataFrame, n_resamples: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Table 13: completion vs benchmark per domain and pooled, then naturalness vs benchmark pooled."""
    scale = int(df["scale_points"].iloc[0]) if len(df) else 5
    clips = _clip_table(df)
    rows = [_rho_row(str(s), clips[clips["suite"] == s], "completion", scale, n_resamples, seed)
            for s in sorted(clips["suite"].unique())]
    rows.append(_rho_row("all domains", clips, "completion", scale, n_resamples, seed))
    rows.append(_rho_row("naturalness, pooled", clips, "naturalness", scale, n_resamples, seed))
    return pd.DataFrame(rows)


@dataclass
class AgreementReport:
    reliability: pd.DataFrame
    human_vs_benchmark: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def to_markdown(self) -> str:
        lines = ["# Rating-study agreement", "", "## Rater reliability (BIRD Table 12)", "",
                 "| comparison | question | pairs | exact match | mean gap (scale steps) | Krippendorff α (ordinal) "
                 "| Spearman ρ |", "|---|---|---|---|---|---|---|"]
        for r in self.reliability.to_dict("records"):
            lines.append(f"| {r['comparison']} | {r['question']} | {r['pairs']} | {r['exact match'].fmt(pct=True)} | "
                         f"{r['mean gap'].fmt()} | {r['alpha'].fmt()} | {r['rho'].fmt()} |")
        lines += ["", "## Human completion vs benchmark score (BIRD Table 13)", "",
                  "| domain | clips | tasks | mean benchmark | mean human | Spearman ρ [95% CI] | resampled |",
                  "|---|---|---|---|---|---|---|"]
        for r in self.human_vs_benchmark.to_dict("records"):
            lines.append(f"| {r['domain']} | {r['clips']} | {r['tasks']} | {r['mean benchmark']:.2f} | "
                         f"{r['mean human']:.2f} | {r['rho'].fmt()} | {r['resampled']} |")
        return "\n".join(lines + ["", *[f"- {n}" for n in self.notes], ""])

    def to_json(self) -> dict[str, Any]:
        def rec(df: pd.DataFrame) -> list[dict[str, Any]]:
            return [{k: ({"value": v.value, "low": v.low, "high": v.high} if isinstance(v, Estimate) else v)
                     for k, v in r.items()} for r in df.to_dict("records")]

        return {"reliability": rec(self.reliability), "human_vs_benchmark": rec(self.human_vs_benchmark),
                "notes": self.notes}


def agreement_report(df: pd.DataFrame, n_resamples: int = 2000, seed: int = 0) -> AgreementReport:
    """Both tables, with notes on how they were computed."""
    notes = [f"Intervals: 95% percentile bootstrap, {n_resamples} resamples (seed {seed}).",
             "Human ratings rescaled to [0, 1] as (rating - 1) / (scale points - 1); benchmark scores outside [0, 1] "
             "rescaled per task to score / best clip's score, clipped to [0, 1].",
             f"{df['rater'].nunique()} raters, {df['clip_id'].nunique()} clips, {len(df)} answers "
             f"({int(df['is_repeat'].astype(int).sum())} repeat showings)."]
    return AgreementReport(reliability(df, n_resamples, seed), human_vs_benchmark(df, n_resamples, seed), notes)
