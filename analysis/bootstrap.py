"""Bootstrap intervals with seeds resampled within tasks and the task set fixed (BIRD paper,
"A Bird's-Eye View of Iterative Reward Design", Fig. 4 and 7 captions; BCa: Efron & Tibshirani 1993, ch. 14)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["Interval", "bca_interval", "interval", "stratified_bootstrap", "FEW_SEEDS", "few_seeds_label"]

METHODS = ("BCa", "percentile")
# Below this many seeds a cell's resamples are few and coarse (2 seeds give 3 distinct means): a 95% interval is then
# about the seeds' range (a percentile of two values is a range), and it is labelled so wherever it is shown.
FEW_SEEDS = 5
STATISTICS = ("task_mean", "pooled_mean")
ScoresLike = Sequence[float] | np.ndarray | Mapping[str, Sequence[float] | np.ndarray]


@dataclass(frozen=True)
class Interval:
    """A point estimate with its interval.

    degenerate: the bootstrap could not vary (every task has one seed, or all replicates are equal), so the
    interval is [estimate, estimate]. n_tasks / n_seeds: tasks and total seeds behind the estimate.
    """

    estimate: float
    low: float
    high: float
    method: str
    n_tasks: int
    n_seeds: int
    degenerate: bool = False


def few_seeds_label(n_seeds: int) -> str:
    """The label an interval over `n_seeds` seeds a cell carries: "" from FEW_SEEDS seeds on."""
    if n_seeds >= FEW_SEEDS:
        return ""
    return f" ({n_seeds} seed{'s' * (n_seeds != 1)} < {FEW_SEEDS}: about the seeds' range)"


def _as_tasks(scores: ScoresLike) -> tuple[list[str], list[np.ndarray]]:
    """Normalise scores to (task names, list of 1-D float arrays); a bare array is one task."""
    if isinstance(scores, Mapping):
        names, arrays = list(scores), [np.asarray(v, dtype=float).ravel() for v in scores.values()]
    else:
        names, arrays = ["_"], [np.asarray(scores, dtype=float).ravel()]
    if not arrays:
        raise ValueError("scores is empty: need at least one task")
    for n, a in zip(names, arrays, strict=True):
        if a.size == 0:
            raise ValueError(f"task {n!r} has no scores")
        if not np.all(np.isfinite(a)):
            raise ValueError(f"task {n!r} has non-finite scores: {a[~np.isfinite(a)][:5]}")
    return names, arrays


def stratified_bootstrap(
    samples: Sequence[np.ndarray],
    statistic: Callable[[Sequence[np.ndarray]], float | np.ndarray],
    method: str = "BCa",
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    random_state: int | np.random.Generator | None = 0,
) -> tuple[np.ndarray, np.ndarray, bool]:
    """Resample every sample independently (with replacement, same size) and bound `statistic`.

    Samples with one observation stay fixed (scipy needs >= 2; they also drop out of the BCa jackknife).
    `random_state` is passed to scipy as `rng=` (a `numpy.random.default_rng` stream).

    Args:
        samples: k 1-D arrays, e.g. one per task, or one per (method, task) cell.
        statistic: f(list of k arrays) -> scalar or vector of length p.
        method: "BCa" or "percentile".
    Returns:
        (low, high, degenerate): arrays of shape () or (p,); degenerate where scipy returned NaN or nothing
        could be resampled, in which case low = high = statistic(samples).
    """
    if method not in METHODS:
        raise ValueError(f"method={method!r}; expected one of {METHODS}")
    if not 0 < confidence_level < 1:
        raise ValueError(f"confidence_level={confidence_level!r} must lie in (0, 1)")
    samples = [np.asarray(s, dtype=float) for s in samples]
    point = np.asarray(statistic(samples), dtype=float)
    free = [i for i, s in enumerate(samples) if s.size >= 2]
    if not free:
        return point, point.copy(), True
    if len(free) < len(samples):
        warnings.warn(f"{len(samples) - len(free)} of {len(samples)} samples have a single observation; "
                      "they are held fixed in the bootstrap", UserWarning, stacklevel=3)

    def stat(*varying: np.ndarray) -> np.ndarray:
        full = list(samples)
        for i, v in zip(free, varying, strict=True):
            full[i] = v
        return np.asarray(statistic(full), dtype=float)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        res = stats.bootstrap(tuple(samples[i] for i in free), stat, vectorized=False, paired=False,
                              method=method, n_resamples=n_resamples, confidence_level=confidence_level,
                              rng=random_state)
    low, high = (np.asarray(b, dtype=float) for b in res.confidence_interval)
    bad = ~(np.isfinite(low) & np.isfinite(high))
    if np.any(bad):
        low, high = np.where(bad, point, low), np.where(bad, point, high)
    return low, high, bool(np.all(bad))


def _task_mean(*tasks: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean([np.mean(t, axis=axis) for t in tasks], axis=0)


def interval(
    scores: ScoresLike,
    method: str = "BCa",
    statistic: str = "task_mean",
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    random_state: int | np.random.Generator | None = 0,
) -> Interval:
    """Mean score with a bootstrap interval, seeds resampled within tasks and the task set fixed.

    Args:
        scores: 1-D array (one task), or mapping task -> 1-D array of per-seed scores (may be ragged).
        method: "BCa" or "percentile".
        statistic: "task_mean" (mean over tasks of per-task means; every task weighs the same) or
            "pooled_mean" (mean over all (task, seed) runs; tasks weigh by their seed count).
    Returns:
        Interval. Degenerate data (e.g. all scores equal) gives [estimate, estimate] with degenerate=True
        and a warning.
    """
    if statistic not in STATISTICS:
        raise ValueError(f"statistic={statistic!r}; expected one of {STATISTICS}")
    if method not in METHODS:
        raise ValueError(f"method={method!r}; expected one of {METHODS}")
    names, tasks = _as_tasks(scores)
    if statistic == "task_mean":
        fixed = [t for t in tasks if t.size < 2]
        free = [t for t in tasks if t.size >= 2]
        n = len(tasks)
        const = sum(float(t[0]) for t in fixed)

        def fast(*ts: np.ndarray, axis: int = -1) -> np.ndarray:
            return (_task_mean(*ts, axis=axis) * len(ts) + const) / n
        estimate = float(np.mean([t.mean() for t in tasks]))
    else:
        total = sum(t.size for t in tasks)
        fixed = [t for t in tasks if t.size < 2]
        free = [t for t in tasks if t.size >= 2]
        const = sum(float(t[0]) for t in fixed)

        def fast(*ts: np.ndarray, axis: int = -1) -> np.ndarray:
            return (np.sum([np.sum(t, axis=axis) for t in ts], axis=0) + const) / total
        estimate = float(np.concatenate(tasks).mean())
    n_seeds = sum(t.size for t in tasks)
    if not free:
        warnings.warn("every task has a single seed: nothing to resample, interval is [estimate, estimate]",
                      UserWarning, stacklevel=2)
        return Interval(estimate, estimate, estimate, method, len(tasks), n_seeds, True)
    if fixed:
        warnings.warn(f"{len(fixed)} task(s) have a single seed and are held fixed in the bootstrap",
                      UserWarning, stacklevel=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        res = stats.bootstrap(tuple(free), fast, vectorized=True, paired=False, method=method,
                              n_resamples=n_resamples, confidence_level=confidence_level, rng=random_state)
    low, high = (float(b) for b in res.confidence_interval)
    if not (np.isfinite(low) and np.isfinite(high)):
        warnings.warn(f"degenerate bootstrap (all replicates equal to {estimate:g}); "
                      "reporting [estimate, estimate]", UserWarning, stacklevel=2)
        return Interval(estimate, estimate, estimate, method, len(tasks), n_seeds, True)
    return Interval(estimate, low, high, method, len(tasks), n_seeds, False)


def bca_interval(
    scores: ScoresLike,
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    random_state: int | np.random.Generator | None = 0,
) -> tuple[float, float]:
    """95% BCa interval of the mean (1-D array) or of the mean over tasks of per-task means (mapping).

    Seeds are resampled within each task; the task set is fixed. Uses `scipy.stats.bootstrap(method='BCa')`
    with `rng=random_state`.

    Args:
        scores: 1-D array of scores, or mapping task -> 1-D array of per-seed scores (ragged allowed).
    Returns:
        (low, high). Degenerate data returns (estimate, estimate) and warns; see `interval` for the flag.
    """
    iv = interval(scores, "BCa", "task_mean", confidence_level, n_resamples, random_state)
    return iv.low, iv.high
