"""Reshape the tidy run tables into the score mappings the statistics take."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["paired_differences", "score_table", "shared_tasks"]


def score_table(runs: pd.DataFrame, benchmark: str | None = None,
                value: str = "returned_score") -> dict[str, dict[str, np.ndarray]]:
    """Mapping method -> task -> per-seed scores (ordered by seed), optionally for one benchmark.

    Task keys are "benchmark/task" so tasks of different benchmarks never collide when pooled.

    Args:
        runs: one row per run, with columns benchmark, task, method, seed and `value`.
    """
    missing = {"benchmark", "task", "method", "seed", value} - set(runs.columns)
    if missing:
        raise ValueError(f"runs lacks columns {sorted(missing)}")
    df = runs if benchmark is None else runs[runs["benchmark"] == benchmark]
    df = df.dropna(subset=[value]).sort_values(["method", "benchmark", "task", "seed"])
    out: dict[str, dict[str, np.ndarray]] = {}
    for (m, b, t), g in df.groupby(["method", "benchmark", "task"], sort=True):
        out.setdefault(str(m), {})[f"{b}/{t}"] = g[value].to_numpy(float)
    return out


def shared_tasks(table: dict[str, dict[str, np.ndarray]]) -> tuple[list[str], dict[str, list[str]]]:
    """Tasks every method has, and per method the tasks it lacks (of the union)."""
    union = sorted(set().union(*(t.keys() for t in table.values()))) if table else []
    common = [t for t in union if all(t in tasks for tasks in table.values())]
    lacking = {m: [t for t in union if t not in tasks] for m, tasks in table.items()}
    return common, {m: v for m, v in lacking.items() if v}


def paired_differences(runs: pd.DataFrame, method_a: str, method_b: str,
                       value: str = "returned_score") -> pd.DataFrame:
    """Per (benchmark, task, seed) difference a - b over the cells both methods ran with a returned score.

    Returns:
        DataFrame with columns benchmark, task, seed, a, b, diff (one row per pair).
    """
    for m in (method_a, method_b):
        if m not in set(runs["method"]):
            raise ValueError(f"method {m!r} not in runs; have {sorted(set(runs['method']))}")
    keys = ["benchmark", "task", "seed"]
    a = runs.loc[runs["method"] == method_a, [*keys, value]].rename(columns={value: "a"})
    b = runs.loc[runs["method"] == method_b, [*keys, value]].rename(columns={value: "b"})
    out = a.merge(b, on=keys, how="inner").dropna(subset=["a", "b"]).sort_values(keys).reset_index(drop=True)
    out["diff"] = out["a"] - out["b"]
    return out
