"""EPIC pseudometric between reward functions (Gleave et al., "Quantifying Differences in Reward
Functions", ICLR 2021, arXiv 2006.13900).

Shaping is R + gamma * Phi(s') - Phi(s); the canonical reward is C(R) = R + gamma m(s') - m(s) - gamma mu, with
m(x) = E_{A~D_A, S'~D_S} R(x, A, S') and mu = E_{S~D_S} m(S). EPIC is the Pearson distance of C(R_A), C(R_B)
under the coverage distribution over transitions.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping

import numpy as np

__all__ = ["ZeroVarianceWarning", "canonicalize_samples", "canonicalize_tabular", "epic_distance_samples",
           "epic_distance_tabular", "pearson_distance"]

VAR_RTOL = 1e-18  # a canonical reward with var <= VAR_RTOL * E[x^2] is treated as constant (std 1e-9 relative)
Obs = np.ndarray | Mapping[str, np.ndarray]
Reward = Callable[[Obs, np.ndarray, Obs], np.ndarray]


class ZeroVarianceWarning(UserWarning):
    """A canonical reward is constant (e.g. pure shaping), so its correlation and EPIC distance are undefined."""


def pearson_distance(x: np.ndarray, y: np.ndarray, weights: np.ndarray | None = None,
                     x_scale: float = 0.0, y_scale: float = 0.0) -> float:
    """sqrt((1 - rho) / 2) of the (weighted) Pearson correlation, in [0, 1].

    Args:
        x, y: same shape; weights: non-negative, same shape (default uniform).
        x_scale, y_scale: magnitude of the raw rewards behind x and y (e.g. max |R|). A canonical reward whose
            variance is <= VAR_RTOL * max(E[x^2], scale^2) counts as constant: pure shaping canonicalises to
            0 plus round-off, which only the raw reward's scale reveals.
    Returns:
        The distance; NaN (with a ZeroVarianceWarning) when x or y has (near) zero variance or is non-finite.
    """
    x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"x has shape {x.shape}, y has {y.shape}")
    w = np.full(x.shape, 1.0) if weights is None else np.asarray(weights, dtype=float).ravel()
    if w.shape != x.shape or np.any(w < 0) or not w.sum() > 0:
        raise ValueError(f"weights must be non-negative with a positive sum and shape {x.shape}")
    w = w / w.sum()
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        warnings.warn("non-finite reward values: EPIC distance is NaN", ZeroVarianceWarning, stacklevel=2)
        return float("nan")
    xc, yc = x - w @ x, y - w @ y
    vx, vy = w @ (xc * xc), w @ (yc * yc)
    if vx <= VAR_RTOL * max(w @ (x * x), x_scale**2) or vy <= VAR_RTOL * max(w @ (y * y), y_scale**2):
        warnings.warn("a canonical reward has zero variance (constant or pure shaping): EPIC distance is NaN",
                      ZeroVarianceWarning, stacklevel=2)
        return float("nan")
    rho = np.clip((w @ (xc * yc)) / np.sqrt(vx * vy), -1.0, 1.0)
    return float(np.sqrt((1.0 - rho) / 2.0))


def _dist(p: np.ndarray | None, n: int, name: str) -> np.ndarray:
    if p is None:
        return np.full(n, 1.0 / n)
    p = np.asarray(p, dtype=float)
    if p.shape != (n,) or np.any(p < 0) or not np.isclose(p.sum(), 1.0):
        raise ValueError(f"{name} must be a probability vector of length {n}; got shape {p.shape}, "
                         f"sum {p.sum():.6g}")
    return p


def _check_discount(discount: float) -> None:
    if not 0.0 <= discount <= 1.0:
        raise ValueError(f"discount={discount!r} must lie in [0, 1]")


def canonicalize_tabular(reward: np.ndarray, discount: float, state_dist: np.ndarray | None = None,
                         action_dist: np.ndarray | None = None) -> np.ndarray:
    """Canonically shaped reward C[s, a, s'] = R + gamma m[s'] - m[s] - gamma mu.

    Args:
        reward: (n_S, n_A, n_S) array R[s, a, s'].
        state_dist, action_dist: D_S (n_S,) and D_A (n_A,), default uniform.
    Returns:
        (n_S, n_A, n_S) array.
    """
    r = np.asarray(reward, dtype=float)
    if r.ndim != 3 or r.shape[0] != r.shape[2]:
        raise ValueError(f"reward must have shape (n_S, n_A, n_S), got {r.shape}")
    _check_discount(discount)
    p_s, p_a = _dist(state_dist, r.shape[0], "state_dist"), _dist(action_dist, r.shape[1], "action_dist")
    m = np.einsum("xaz,a,z->x", r, p_a, p_s)
    mu = p_s @ m
    return r + discount * m[None, None, :] - m[:, None, None] - discount * mu


def epic_distance_tabular(reward_a: np.ndarray, reward_b: np.ndarray, discount: float,
                          state_dist: np.ndarray | None = None, action_dist: np.ndarray | None = None,
                          coverage: np.ndarray | None = None) -> float:
    """EPIC distance between two tabular rewards `R[s][a][s_next]`.

    Args:
        reward_a, reward_b: (n_S, n_A, n_S) arrays.
        discount: gamma in [0, 1], the same gamma as the shaping to be ignored.
        state_dist, action_dist: canonicalisation distributions D_S (n_S,), D_A (n_A,); default uniform.
        coverage: (n_S, n_A, n_S) non-negative weights of the Pearson correlation; default uniform.
    Returns:
        Distance in [0, 1]; NaN when a canonical reward has zero variance.
    """
    ra, rb = np.asarray(reward_a, dtype=float), np.asarray(reward_b, dtype=float)
    if ra.shape != rb.shape:
        raise ValueError(f"reward_a has shape {ra.shape}, reward_b has {rb.shape}")
    if coverage is not None and np.shape(coverage) != ra.shape:
        raise ValueError(f"coverage has shape {np.shape(coverage)}, expected {ra.shape}")
    ca = canonicalize_tabular(ra, discount, state_dist, action_dist)
    cb = canonicalize_tabular(rb, discount, state_dist, action_dist)
    return pearson_distance(ca, cb, coverage, float(np.abs(ra).max()), float(np.abs(rb).max()))


# --- sample-based estimator: observations are arrays (N, ...) or dicts of named arrays (N, ...) ---

def _n(o: Obs) -> int:
    if isinstance(o, Mapping):
        sizes = {k: len(v) for k, v in o.items()}
        if len(set(sizes.values())) != 1:
            raise ValueError(f"observation fields have different lengths: {sizes}")
        return next(iter(sizes.values()))
    return len(o)


def _map(o: Obs, f: Callable[[np.ndarray], np.ndarray]) -> Obs:
    return {k: f(np.asarray(v)) for k, v in o.items()} if isinstance(o, Mapping) else f(np.asarray(o))


def _flat(o: Obs) -> np.ndarray:
    """(N, d) float view of an observation batch, for deduplicating states."""
    parts = o.values() if isinstance(o, Mapping) else [o]
    return np.concatenate([np.asarray(v, dtype=float).reshape(len(v), -1) for v in parts], axis=1)


def _concat(batches: list[Obs]) -> Obs:
    if isinstance(batches[0], Mapping):
        return {k: np.concatenate([np.asarray(b[k]) for b in batches]) for k in batches[0]}
    return np.concatenate([np.asarray(b) for b in batches])


def _call(reward: Reward, obs: Obs, acts: np.ndarray, next_obs: Obs) -> np.ndarray:
    out = np.asarray(reward(obs, acts, next_obs), dtype=float)
    n = _n(obs)
    if out.shape != (n,):
        raise ValueError(f"reward {getattr(reward, '__name__', reward)!r} returned shape {out.shape}, "
                         f"expected ({n},)")
    return out


def _mean_reward(reward: Reward, states: Obs, mean_obs: Obs, mean_acts: np.ndarray,
                 chunk: int) -> tuple[np.ndarray, float]:
    """m_hat(z) = mean_j R(z, mean_acts[j], mean_obs[j]) for every state z (paired samples, not a mesh), and
    the largest |R| evaluated."""
    n_m, n_z = len(mean_acts), _n(states)
    step = max(1, chunk // n_m)
    out, peak = np.empty(n_z), 0.0
    for lo in range(0, n_z, step):
        hi = min(n_z, lo + step)
        z = _map(states, lambda v, lo=lo, hi=hi: np.repeat(v[lo:hi], n_m, axis=0))
        u = np.tile(np.asarray(mean_acts), (hi - lo,) + (1,) * (np.ndim(mean_acts) - 1))
        x = _map(mean_obs, lambda v, hi=hi, lo=lo: np.tile(v, (hi - lo,) + (1,) * (v.ndim - 1)))
        r = _call(reward, z, u, x)
        peak = max(peak, float(np.abs(r).max()))
        out[lo:hi] = r.reshape(hi - lo, n_m).mean(axis=1)
    return out, peak


def canonicalize_samples(reward: Reward, obs: Obs, acts: np.ndarray, next_obs: Obs, mean_obs: Obs,
                         mean_acts: np.ndarray, discount: float, chunk_size: int = 1 << 18,
                         return_scale: bool = False) -> np.ndarray | tuple[np.ndarray, float]:
    """Sample estimate of C(R) on a batch of transitions (evaluating_rewards' `sample_canon_shaping`).

    m_hat(z) = mean_j R(z, mean_acts[j], mean_obs[j]); mu_hat = mean_j m_hat(mean_obs[j]);
    C = R(obs, acts, next_obs) + gamma m_hat(next_obs) - m_hat(obs) - gamma mu_hat. Repeated states are
    evaluated once. Pass the same mean samples for every reward compared (common random numbers).

    Args:
        reward: f(obs, acts, next_obs) -> (N,) array, vectorised over the batch.
        obs, next_obs: (N_V, ...) arrays or dicts of named (N_V, ...) arrays; acts: (N_V, ...).
        mean_obs, mean_acts: N_M paired samples from D_S and D_A (same layout as obs / acts).
        chunk_size: reward evaluations per call.
        return_scale: also return max |R| over every evaluation (the `x_scale` of `pearson_distance`).
    Returns:
        (N_V,) array, or (array, scale).
    """
    _check_discount(discount)
    n_v, n_m = _n(obs), _n(mean_obs)
    if _n(next_obs) != n_v or len(acts) != n_v:
        raise ValueError(f"obs ({n_v}), acts ({len(acts)}) and next_obs ({_n(next_obs)}) differ in length")
    if len(mean_acts) != n_m or n_m == 0:
        raise ValueError(f"mean_obs ({n_m}) and mean_acts ({len(mean_acts)}) must be non-empty and paired")
    states = _concat([obs, next_obs, mean_obs])
    _, first, inverse = np.unique(_flat(states), axis=0, return_index=True, return_inverse=True)
    m_unique, peak = _mean_reward(reward, _map(states, lambda v: v[first]), mean_obs, mean_acts, chunk_size)
    m = m_unique[inverse.ravel()]
    m_s, m_next, m_mean = m[:n_v], m[n_v:2 * n_v], m[2 * n_v:]
    r = _call(reward, obs, acts, next_obs)
    canon = r + discount * m_next - m_s - discount * m_mean.mean()
    return (canon, max(peak, float(np.abs(r).max()))) if return_scale else canon


def epic_distance_samples(reward_a: Reward, reward_b: Reward, obs: Obs, acts: np.ndarray, next_obs: Obs,
                          mean_obs: Obs, mean_acts: np.ndarray, discount: float) -> float:
    """Sample-based EPIC distance: unweighted Pearson distance of the canonical rewards over the batch.

    Args:
        reward_a, reward_b: f(obs, acts, next_obs) -> (N,) array.
        obs, acts, next_obs: N_V transitions from the coverage distribution (arrays or dicts of arrays).
        mean_obs, mean_acts: N_M paired samples (mean_acts[j], mean_obs[j]) from D_A and D_S.
        discount: gamma in [0, 1].
    Returns:
        Distance in [0, 1]; NaN when a canonical reward has zero variance.
    """
    ca, sa = canonicalize_samples(reward_a, obs, acts, next_obs, mean_obs, mean_acts, discount, return_scale=True)
    cb, sb = canonicalize_samples(reward_b, obs, acts, next_obs, mean_obs, mean_acts, discount, return_scale=True)
    return pearson_distance(ca, cb, x_scale=sa, y_scale=sb)
