"""Bradley–Terry ratings on the Elo scale from per-task seed-vs-seed comparisons (BIRD paper,
"A Bird's-Eye View of Iterative Reward Design", Fig. 7 caption)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize

from .bootstrap import stratified_bootstrap

__all__ = ["BTIntervals", "Ratings", "bradley_terry", "bradley_terry_intervals", "l2_from_prior_sd_elo",
           "strongly_connected", "to_table", "win_matrix", "DEFAULT_PRIOR_SD_ELO", "DEFAULT_L2"]

ELO_PER_NAT = 400.0 / math.log(10.0)
# The default prior on each rating, a modelling choice (docs/analysis.md): Gelman et al. 2008 (Ann. Appl. Stat.
# 2(4):1360-1383) recommend scale 2.5 on the logit scale for a logistic-regression coefficient, which keeps fits finite
# under separation (a method that never loses); here a Gaussian (the fit's ridge penalty) with that scale on the
# difference of two ratings: 2.5 / sqrt(2) nats = 307 Elo per rating, rounded.
DEFAULT_PRIOR_SD_ELO = 300.0
TIE_DECIMALS = 9  # scores are rounded to 1e-9 before comparing, so equal success rates tie exactly
Table = Mapping[str, Mapping[str, Sequence[float]]] | pd.DataFrame


class Ratings(dict):
    """Elo ratings (method -> float). `strongly_connected` is False when the MLE is not finite (Ford 1957):
    some set of methods never loses (or never wins) against the rest, and their ratings are meaningless."""

    strongly_connected: bool = True


@dataclass(frozen=True)
class BTIntervals:
    """Ratings with bootstrap intervals (seeds resampled in every (method, task) cell, tasks fixed).

    n_not_connected counts statistic evaluations (replicates + jackknife) whose win graph was not strongly
    connected, out of n_fits: in those the ratings of the separated methods are set by the prior, not the data.
    `identifiable` is False when their share exceeds one tail of the interval ((1 - confidence_level) / 2): they
    could then be what sets a bound, and the interval is reported as not identifiable instead of printed.
    """

    ratings: Ratings
    low: dict[str, float]
    high: dict[str, float]
    method: str
    n_resamples: int
    n_not_connected: int
    n_fits: int
    confidence_level: float = 0.95
    l2: float = 0.0

    @property
    def not_connected_share(self) -> float:
        return self.n_not_connected / self.n_fits if self.n_fits else 0.0

    @property
    def identifiable(self) -> bool:
        return self.not_connected_share <= (1.0 - self.confidence_level) / 2

    def describe(self, m: str) -> str:
        """Method m's rating as a reader should read it: `1500 [1400, 1600]`, with the share of resamples that were
        not strongly connected when there are any, or `1500 (not identifiable: ...)`."""
        shown = f"{self.ratings[m]:.0f}" + ("" if self.ratings.strongly_connected else " (rating set by the prior)")
        share = f"{self.not_connected_share:.1%} of resamples not connected"
        if not self.identifiable:
            return f"{shown} (not identifiable: {share})"
        return f"{shown} [{self.low[m]:.0f}, {self.high[m]:.0f}]" + (f" ({share})" if self.n_not_connected else "")


def to_table(table: Table) -> dict[str, dict[str, np.ndarray]]:
    """Mapping method -> task -> 1-D array from a mapping or a long DataFrame (method, task, seed, score)."""
    if isinstance(table, pd.DataFrame):
        missing = {"method", "task", "score"} - set(table.columns)
        if missing:
            raise ValueError(f"DataFrame lacks columns {sorted(missing)}; has {list(table.columns)}")
        order = ["method", "task", "seed"] if "seed" in table.columns else ["method", "task"]
        df = table.sort_values(order)
        return {str(m): {str(t): g["score"].to_numpy(float) for t, g in gm.groupby("task", sort=True)}
                for m, gm in df.groupby("method", sort=True)}
    out = {str(m): {str(t): np.asarray(v, dtype=float).ravel() for t, v in tasks.items()}
           for m, tasks in table.items()}
    for m, tasks in out.items():
        for t, v in tasks.items():
            if not np.all(np.isfinite(v)):
                raise ValueError(f"method {m!r} task {t!r} has non-finite scores {v}")
    return out


def _cells(tab: dict[str, dict[str, np.ndarray]]) -> tuple[list[str], list[tuple[int, str]], list[np.ndarray]]:
    """Methods (sorted), the (method index, task) cells in (method, task) order, and their scores rounded to
    1e-9 (so that equal success rates computed differently tie)."""
    methods = sorted(tab)
    cells = [(i, t) for i, m in enumerate(methods) for t in sorted(tab[m])]
    return methods, cells, [np.round(tab[methods[i]][t], TIE_DECIMALS) for i, t in cells]


def _wins(cells: list[tuple[int, str]], samples: Sequence[np.ndarray], n_methods: int) -> np.ndarray:
    """W from per-cell scores: within each task, every seed against every seed of the other methods.

    Per task, with E the (seeds x methods) one-hot matrix and G[k, l] = 1[x_k > x_l] + 1/2 1[x_k = x_l]
    = (1 + sign(x_k - x_l)) / 2, the task adds E^T G E; its diagonal (a method against itself) is dropped.
    """
    by_task: dict[str, list[int]] = {}
    for c, (_, t) in enumerate(cells):
        by_task.setdefault(t, []).append(c)
    eye = np.eye(n_methods)
    w = np.zeros((n_methods, n_methods))
    for members in by_task.values():
        if len(members) < 2:
            continue
        parts = [samples[c] for c in members]
        x = np.concatenate(parts)
        e = eye[np.repeat([cells[c][0] for c in members], [len(p) for p in parts])]
        g = 0.5 + 0.5 * np.sign(x[:, None] - x[None, :])
        w += e.T @ g @ e
    np.fill_diagonal(w, 0.0)
    return w


def win_matrix(table: Table) -> tuple[list[str], np.ndarray]:
    """W[i, j] = wins of method i over method j, summed over tasks both have, seeds all-vs-all, ties half.

    Scores are rounded to 1e-9 before comparing.

    Returns:
        (methods sorted by name, W of shape (M, M)).
    """
    methods, cells, samples = _cells(to_table(table))
    return methods, _wins(cells, samples, len(methods))


def strongly_connected(w: np.ndarray) -> bool:
    """True when every method reaches every other along edges i -> j with W[i, j] > 0 (and back)."""
    adj = np.asarray(w) > 0
    n = adj.shape[0]
    if n <= 1:
        return True

    def reach(a: np.ndarray) -> int:
        seen, stack = {0}, [0]
        while stack:
            for k in np.flatnonzero(a[stack.pop()]):
                if k not in seen:
                    seen.add(int(k))
                    stack.append(int(k))
        return len(seen)

    return reach(adj) == n and reach(adj.T) == n


def _fit(w: np.ndarray, l2: float) -> np.ndarray:
    """Penalised MLE theta (natural units) of sum_ij W_ij log(1 + exp(-(t_i - t_j))) + l2 * sum t^2."""
    n = w.shape[0]
    nn = w + w.T
    if n == 1:
        return np.zeros(1)

    def parts(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        diff = theta[:, None] - theta[None, :]
        return diff, 1.0 / (1.0 + np.exp(-diff))

    def fun(theta: np.ndarray) -> float:
        diff, _ = parts(theta)
        return float(np.sum(w * np.logaddexp(0.0, -diff)) + l2 * theta @ theta)

    def jac(theta: np.ndarray) -> np.ndarray:
        _, p = parts(theta)
        return np.sum(nn * p - w, axis=1) + 2 * l2 * theta

    def hess(theta: np.ndarray) -> np.ndarray:
        _, p = parts(theta)
        h = -nn * p * (1 - p)
        np.fill_diagonal(h, 0.0)
        h[np.diag_indices(n)] = -h.sum(axis=1) + 2 * l2
        return h

    res = optimize.minimize(fun, np.zeros(n), jac=jac, hess=hess, method="trust-exact",
                            options={"gtol": 1e-10, "maxiter": 1000})
    if not np.max(np.abs(jac(res.x))) < 1e-6 * max(1.0, float(nn.sum())):
        raise RuntimeError(f"Bradley–Terry fit did not converge: {res.message} (max|g|="
                           f"{np.max(np.abs(jac(res.x))):.3g})")
    return res.x


def l2_from_prior_sd_elo(sd_elo: float) -> float:
    """The `l2` of a Gaussian prior with standard deviation `sd_elo` Elo on each rating: 1 / (2 sigma^2), sigma in
    natural units. It keeps ratings finite when the win graph is not strongly connected; report its value."""
    if not sd_elo > 0:
        raise ValueError(f"sd_elo={sd_elo!r} must be > 0")
    return 1.0 / (2.0 * (sd_elo / ELO_PER_NAT) ** 2)


DEFAULT_L2 = l2_from_prior_sd_elo(DEFAULT_PRIOR_SD_ELO)


def _elo(theta: np.ndarray, anchor: float) -> np.ndarray:
    return anchor + ELO_PER_NAT * (theta - theta.mean())


def bradley_terry(table: Table, l2: float = DEFAULT_L2, anchor: float = 1500.0) -> Ratings:
    """Bradley–Terry ratings on the Elo scale (BIRD Fig. 7).

    Within each task every seed of one method is compared with every seed of another; the higher score wins
    and an exact tie (after rounding to 1e-9) counts half. The fit minimises the L2-penalised negative
    log-likelihood in natural-log units, `l2 * sum(theta**2)` (default: a Gaussian prior of DEFAULT_PRIOR_SD_ELO
    per rating), then maps to Elo (400/ln 10 per unit) with mean `anchor`. Warns and sets `strongly_connected=False` when the win graph is not strongly connected.

    Args:
        table: mapping method -> task -> per-seed scores, or a long DataFrame (method, task, seed, score).
    Returns:
        Ratings: dict method -> Elo, with attribute `strongly_connected`.
    """
    if l2 < 0:
        raise ValueError(f"l2={l2!r} must be >= 0")
    methods, w = win_matrix(table)
    if not methods:
        raise ValueError("table is empty: no methods")
    connected = strongly_connected(w)
    if not connected:
        warnings.warn("the win graph is not strongly connected: some methods never lose (or never win) "
                      f"against the rest; their ratings are set by l2={l2:g}, not by the data",
                      UserWarning, stacklevel=2)
    out = Ratings(zip(methods, _elo(_fit(w, l2), anchor).tolist(), strict=True))
    out.strongly_connected = connected
    return out


def bradley_terry_intervals(
    table: Table,
    l2: float = DEFAULT_L2,
    anchor: float = 1500.0,
    confidence_level: float = 0.95,
    n_resamples: int = 2_000,
    method: str = "BCa",
    random_state: int | np.random.Generator | None = 0,
) -> BTIntervals:
    """Bradley–Terry ratings with intervals that resample seeds in every (method, task) cell, tasks fixed.

    Each replicate recomputes W, refits and re-anchors. Cells are ordered by (method, task) names. The BCa
    jackknife adds one fit per seed per cell.

    Returns:
        BTIntervals with per-method low/high, the count of not-strongly-connected fits and whether the intervals
        are identifiable.
    """
    tab = to_table(table)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ratings = bradley_terry(tab, l2, anchor)
    if not ratings.strongly_connected:
        warnings.warn("the win graph is not strongly connected; see BTIntervals.n_not_connected",
                      UserWarning, stacklevel=2)
    methods, cells, samples = _cells(tab)
    counts = {"fits": 0, "bad": 0}

    def stat(resampled: Sequence[np.ndarray]) -> np.ndarray:
        w = _wins(cells, resampled, len(methods))
        counts["fits"] += 1
        counts["bad"] += not strongly_connected(w)
        return _elo(_fit(w, l2), anchor)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        low, high, _ = stratified_bootstrap(samples, stat, method, confidence_level, n_resamples, random_state)
    return BTIntervals(ratings, dict(zip(methods, np.atleast_1d(low).tolist(), strict=True)),
                       dict(zip(methods, np.atleast_1d(high).tolist(), strict=True)), method, n_resamples,
                       counts["bad"], counts["fits"], confidence_level, l2)
