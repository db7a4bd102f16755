"""Demo fitness (registry family fitness): how a reward separates expert states from negative states, without RL.

- demo_airl: GRACE Eq. 4.1 with π(a|s) ≡ 1, so D_r(s) = σ(r(s)):
  f = mean_{s∈S_e} log σ(r(s)) + mean_{s∈S_n} log σ(−r(s))   (class-balanced, in (−∞, 0]).
- demo_pairwise: the fraction of (expert, negative) state pairs the reward orders correctly (ties count ½), the
  [0, 1] "fitness/accuracy" of GRACE Figs 2 and 4 (1.0 = every expert state above every negative state).
"""

from __future__ import annotations

import hashlib
import random

import numpy as np

from bird.registry import register

__all__ = ["airl_loglik", "pairwise_accuracy", "state_loglik", "worst_rows"]


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    return -np.logaddexp(0.0, -x)


def airl_loglik(pos: np.ndarray, neg: np.ndarray) -> float | None:
    if len(pos) == 0 or len(neg) == 0:
        return None
    return float(_log_sigmoid(pos).mean() + _log_sigmoid(-neg).mean())


def pairwise_accuracy(pos: np.ndarray, neg: np.ndarray) -> float | None:
    if len(pos) == 0 or len(neg) == 0:
        return None
    ordered = np.sort(neg)
    below = np.searchsorted(ordered, pos, side="left")
    ties = np.searchsorted(ordered, pos, side="right") - below
    return float((below + 0.5 * ties).sum() / (len(pos) * len(neg)))


def state_loglik(reward: np.ndarray, label: np.ndarray) -> np.ndarray:
    """Each state's term of Eq. 4.1 (0 for dropped states): low = the reward gets this state wrong."""
    out = np.zeros(len(reward))
    out[label > 0] = _log_sigmoid(reward[label > 0])
    out[label < 0] = _log_sigmoid(-reward[label < 0])
    return out


@register("fitness", "demo_airl", needs_policy=False)
def _demo_airl(ev: object) -> float | None:
    demo = getattr(ev, "demo", None)
    return None if demo is None else airl_loglik(demo.positives, demo.negatives)


@register("fitness", "demo_pairwise", needs_policy=False)
def _demo_pairwise(ev: object) -> float | None:
    demo = getattr(ev, "demo", None)
    return None if demo is None else pairwise_accuracy(demo.positives, demo.negatives)


def worst_rows(scores: object, n: int, salt: str) -> list[int]:
    """Up to n low-fitness rows (GRACE §4: "a random sample of states with low fitness under r"), half expert and
    half negative where possible: a seeded random sample among the 5n lowest-likelihood states of each class."""
    eps = scores.episodes  # type: ignore[attr-defined]
    ll = state_loglik(scores.reward, eps.label)  # type: ignore[attr-defined]
    rng = random.Random(int(hashlib.sha256(salt.encode()).hexdigest()[:16], 16))
    picked: list[int] = []
    for lab, quota in ((1, (n + 1) // 2), (-1, n // 2)):
        rows = np.flatnonzero(eps.label == lab)
        worst = rows[np.argsort(ll[rows], kind="stable")][: 5 * n].tolist()
        picked += rng.sample(worst, min(quota, len(worst)))
    return sorted(picked)
