"""The leaderboard's per-task table: each method's returned score on each task, mean over seeds with a 95% BCa interval."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .bootstrap import interval

__all__ = ["per_task_table"]

COLUMNS = ["benchmark", "task", "method", "n_runs", "n_seeds", "mean", "low", "high", "degenerate", "min", "max"]


def per_task_table(runs: pd.DataFrame, n_resamples: int = 10_000, random_state: int = 0) -> pd.DataFrame:
    """One row per (benchmark, task, method), sorted by those keys.

    Args:
        runs: RunCollection.runs (benchmark, task, method, seed, returned_score).
        n_resamples / random_state: of the BCa bootstrap over the seeds of one task.
    Returns:
        DataFrame with COLUMNS: n_runs counts every run, n_seeds those with a returned score (the others are left
        out of mean, low, high, min and max, which are NaN when no seed has one); degenerate: one seed or equal
        scores, so [low, high] = [mean, mean].
    """
    rows = []
    for (bench, task, method), g in runs.groupby(["benchmark", "task", "method"], sort=True):
        scores = g["returned_score"].dropna().to_numpy(float)
        row = {"benchmark": bench, "task": task, "method": method, "n_runs": len(g), "n_seeds": scores.size,
               "mean": np.nan, "low": np.nan, "high": np.nan, "degenerate": True, "min": np.nan, "max": np.nan}
        if scores.size:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                iv = interval(scores, "BCa", n_resamples=n_resamples, random_state=random_state)
            row.update(mean=iv.estimate, low=iv.low, high=iv.high, degenerate=iv.degenerate, min=scores.min(),
                       max=scores.max())
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)
