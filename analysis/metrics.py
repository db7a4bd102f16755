"""rliable's aggregate metrics (Agarwal et al., "Deep Reinforcement Learning at the Edge of the
Statistical Precipice", NeurIPS 2021, arXiv 2108.13264) on dense or ragged score tables.

A score table is a (num_runs x num_tasks) array, as in rliable, or a mapping task -> 1-D array of per-seed
scores, which may be ragged. Scores should be normalised per task first (random = 0, reference = 1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
from scipy import stats

from .bootstrap import Interval, stratified_bootstrap

__all__ = ["aggregate_iqm", "aggregate_mean", "aggregate_median", "aggregate_optimality_gap",
           "metric_interval", "performance_profile", "probability_of_improvement"]

ScoreTable = np.ndarray | Mapping[str, Sequence[float] | np.ndarray]


def _columns(scores: ScoreTable) -> list[np.ndarray]:
    """Per-task 1-D arrays from a (runs x tasks) array or a task mapping."""
    if isinstance(scores, Mapping):
        cols = [np.asarray(v, dtype=float).ravel() for v in scores.values()]
    else:
        arr = np.asarray(scores, dtype=float)
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim != 2:
            raise ValueError(f"scores must be (num_runs x num_tasks), got shape {arr.shape}")
        cols = list(arr.T)
    if not cols or any(c.size == 0 for c in cols):
        raise ValueError("scores need at least one task and one run per task")
    return cols


def aggregate_mean(scores: ScoreTable) -> float:
    """Mean over tasks of the per-task mean over runs."""
    return float(np.mean([c.mean() for c in _columns(scores)]))


def aggregate_median(scores: ScoreTable) -> float:
    """Median over tasks of the per-task mean over runs."""
    return float(np.median([c.mean() for c in _columns(scores)]))


def aggregate_iqm(scores: ScoreTable) -> float:
    """Interquartile mean of all run x task scores pooled: drop floor(25%) from each end, average the rest."""
    return float(stats.trim_mean(np.concatenate(_columns(scores)), proportiontocut=0.25))


def aggregate_optimality_gap(scores: ScoreTable, gamma: float = 1.0) -> float:
    """gamma - mean(min(score, gamma)) over all run x task scores pooled (lower is better)."""
    pooled = np.concatenate(_columns(scores))
    return float(gamma - np.mean(np.minimum(pooled, gamma)))


def probability_of_improvement(scores_x: ScoreTable, scores_y: ScoreTable) -> float:
    """P(X > Y): mean over tasks of the all-pairs win rate of X's runs over Y's runs, ties counting half.

    Both tables must have the same tasks (same order for arrays, same keys for mappings).
    """
    if isinstance(scores_x, Mapping) != isinstance(scores_y, Mapping):
        raise TypeError("scores_x and scores_y must both be arrays or both be mappings")
    if isinstance(scores_x, Mapping):
        if set(scores_x) != set(scores_y):
            raise ValueError(f"task sets differ: only in x {sorted(set(scores_x) - set(scores_y))}, "
                             f"only in y {sorted(set(scores_y) - set(scores_x))}")
        scores_y = {t: scores_y[t] for t in scores_x}
    xs, ys = _columns(scores_x), _columns(scores_y)
    if len(xs) != len(ys):
        raise ValueError(f"x has {len(xs)} tasks, y has {len(ys)}")
    per_task = []
    for x, y in zip(xs, ys, strict=True):
        d = x[:, None] - y[None, :]
        per_task.append((np.sum(d > 0) + 0.5 * np.sum(d == 0)) / d.size)
    return float(np.mean(per_task))


def performance_profile(scores: ScoreTable, taus: Sequence[float] | np.ndarray,
                        average_score: bool = False) -> np.ndarray:
    """Score distribution F(tau) = fraction of runs with score > tau (strict), averaged over tasks.

    On a dense table this is rliable's run-score distribution (the fraction over all runs x tasks).
    With average_score=True, the fraction of tasks whose mean score is > tau.

    Returns:
        array of shape (len(taus),).
    """
    taus = np.asarray(taus, dtype=float)
    cols = _columns(scores)
    if average_score:
        means = np.array([c.mean() for c in cols])
        return np.mean(means[:, None] > taus[None, :], axis=0)
    return np.mean([np.mean(c[:, None] > taus[None, :], axis=0) for c in cols], axis=0)


def metric_interval(
    scores: ScoreTable,
    metric: Callable[[Mapping[str, np.ndarray]], float],
    method: str = "percentile",
    confidence_level: float = 0.95,
    n_resamples: int = 2_000,
    random_state: int | np.random.Generator | None = 0,
) -> Interval:
    """Stratified-bootstrap interval of `metric` (runs resampled within tasks, tasks fixed).

    Args:
        scores: (runs x tasks) array or task mapping.
        metric: f(task mapping) -> float, e.g. `aggregate_iqm` or `lambda s: aggregate_optimality_gap(s)`.
    Returns:
        Interval (scalar metrics only).
    """
    cols = _columns(scores)

    def stat(samples: Sequence[np.ndarray]) -> float:
        return metric({str(i): s for i, s in enumerate(samples)})

    low, high, degenerate = stratified_bootstrap(cols, stat, method, confidence_level, n_resamples,
                                                 random_state)
    return Interval(float(stat(cols)), float(low), float(high), method, len(cols),
                    int(sum(c.size for c in cols)), degenerate)
