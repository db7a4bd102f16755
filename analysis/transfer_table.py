"""The leaderboard's generalisation table (PRM4RL App. B.1, `+protocol=prm4rl_generalisation`): the source-trained
policy's score on the source task and on each unseen task, mean over seeds with a 95% BCa interval."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from .bootstrap import few_seeds_label, interval

__all__ = ["transfer_table", "transfer_rows", "COLUMNS", "TRANSFER_HEAD", "TRANSFER_NOTE"]

COLUMNS = ["method", "source", "task", "unseen", "n_seeds", "mean", "low", "high", "degenerate"]


def _row(method: str, source: str, task: str, unseen: bool, scores: np.ndarray, n_resamples: int,
         random_state: int) -> dict:
    row = {"method": method, "source": source, "task": task, "unseen": unseen, "n_seeds": scores.size,
           "mean": np.nan, "low": np.nan, "high": np.nan, "degenerate": True}
    if scores.size:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            iv = interval(scores, "BCa", n_resamples=n_resamples, random_state=random_state)
        row.update(mean=iv.estimate, low=iv.low, high=iv.high, degenerate=iv.degenerate)
    return row


def transfer_table(transfer: pd.DataFrame, runs: pd.DataFrame, n_resamples: int = 10_000,
                   random_state: int = 0) -> pd.DataFrame:
    """One row per (method, source task, task): the source itself first (its returned score), then each unseen task.

    Args:
        transfer: RunCollection.transfer (method, seed, source, unseen, transfer_score: a run's mean over its final
            seeds).
        runs: RunCollection.runs (env, method, seed, returned_score), for the source rows.
        n_resamples / random_state: of the BCa bootstrap over the seeds (runs).
    Returns:
        DataFrame with COLUMNS; n_seeds counts the runs with a score (NaN mean, low, high when none has one);
        degenerate: one seed or equal scores, so [low, high] = [mean, mean]. Empty when no run transferred.
    """
    rows = []
    if len(transfer):
        for (method, source), g in transfer.groupby(["method", "source"], sort=True):
            trained = runs[(runs["method"] == method) & (runs["env"] == source)
                           & runs["seed"].isin(g["seed"].unique())]["returned_score"].dropna().to_numpy(float)
            rows.append(_row(method, source, source, False, trained, n_resamples, random_state))
            for unseen, u in g.groupby("unseen", sort=False):
                scores = u["transfer_score"].dropna().to_numpy(float)
                rows.append(_row(method, source, unseen, True, scores, n_resamples, random_state))
    return pd.DataFrame(rows, columns=COLUMNS)


def transfer_rows(transfer: pd.DataFrame) -> list[list[str]]:
    """The generalisation table's cells (Markdown and HTML share them): method, source, task, seeds, mean [95% BCa]."""
    out = []
    for t in transfer.itertuples():
        label = " (degenerate)" if t.degenerate else few_seeds_label(t.n_seeds)  # as the per-task table labels them
        mean = f"{t.mean:.3f} [{t.low:.3f}, {t.high:.3f}]{label}" if t.n_seeds else "n/a (not evaluated)"
        task = t.task if t.unseen else f"{t.task} (source)"
        out.append([t.method, t.source, task, str(t.n_seeds), mean])
    return out


TRANSFER_HEAD = ["method", "trained on", "evaluated on", "seeds", "success [95% BCa]"]
TRANSFER_NOTE = ("The returned policy of each search, trained on its source task, evaluated unchanged on unseen tasks "
                 "(PRM4RL App. B.1; `+protocol=prm4rl_generalisation`): each seed is one search, its score the mean "
                 "over its final seeds' policies; intervals: 95% BCa over seeds.")
