"""Parameter alignment on labelled trajectory segments (registry family alignment), R*'s second stage: each new reward's
float literals are tuned so that its segment returns explain the critics' preferences under a Bradley–Terry model,
by SPSA (the program is a black box: two evaluations per step, any number of parameters).

Parametrisation [ours]: θ = θ₀·exp(u) for a non-zero literal θ₀ (u = log-scale change; signs never flip), θ = u for
a zero literal. Scale [ours]: return differences are divided by the spread of the segment returns under the θ being
scored, so the loss is invariant to the reward's overall scale and only its shape is fitted. Acceptance [ours]: the tuned values are kept when the held-out
pairs' loss does not get worse (or, with no held-out pair, when the training loss improves)."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bird.components.critics import cut_segments, sample_pairs
from bird.components.literals import ThetaProgram, substitute
from bird.config.schema import BirdConfig
from bird.llm.base import Generator
from bird.registry import get, register
from bird.reward.sandbox import RewardProgramError
from bird.state import SearchState
from bird.types import Candidate

__all__ = ["bt_loss", "fit_literals", "FitResult", "pair_accuracy"]


def bt_loss(returns: np.ndarray, pairs: np.ndarray) -> float:
    """Mean Bradley–Terry negative log-likelihood of pairs (winner, loser) given segment returns (S,), with return
    differences in units of the returns' spread (so the loss cannot fall by scaling the reward up)."""
    if len(pairs) == 0:
        return 0.0
    spread = float(np.std(returns)) or 1.0
    d = (returns[pairs[:, 0]] - returns[pairs[:, 1]]) / spread
    return float(np.mean(np.logaddexp(0.0, -d)))


def pair_accuracy(returns: np.ndarray, pairs: np.ndarray) -> float | None:
    """Fraction of pairs whose winner has the strictly higher return (ties count half)."""
    if len(pairs) == 0:
        return None
    d = returns[pairs[:, 0]] - returns[pairs[:, 1]]
    return float(np.mean((d > 0) + 0.5 * (d == 0)))


@dataclass
class FitResult:
    theta0: np.ndarray
    theta: np.ndarray  # the tuned values (theta0 when not accepted)
    accepted: bool
    record: dict[str, Any] = field(default_factory=dict)


def _theta(theta0: np.ndarray, u: np.ndarray) -> np.ndarray:
    return np.where(theta0 != 0.0, theta0 * np.exp(u), u)


def fit_literals(segment_returns: Callable[[np.ndarray], np.ndarray], theta0: np.ndarray, pairs: np.ndarray, *,
                 iterations: int, learning_rate: float, perturbation: float, train_fraction: float,
                 rng: np.random.Generator) -> FitResult:
    """Fit literal values to preference pairs by SPSA on the Bradley–Terry loss.

    :param segment_returns: thetas (G, n) -> segment returns (G, S); may raise (that step is skipped).
    :param pairs: (m, 2) segment indices (winner, loser).
    """
    theta0 = np.asarray(theta0, dtype=np.float64)
    order = rng.permutation(len(pairs))
    n_train = max(1, int(round(train_fraction * len(pairs))))
    train, held = pairs[order[:n_train]], pairs[order[n_train:]]
    base = segment_returns(theta0[None, :])[0]
    u = np.zeros_like(theta0)
    skipped = 0
    for _ in range(iterations):
        delta = rng.choice([-1.0, 1.0], size=len(u))
        try:
            both = segment_returns(np.stack([_theta(theta0, u + perturbation * delta),
                                             _theta(theta0, u - perturbation * delta)]))
        except Exception:  # noqa: BLE001 - a parameter vector the program cannot run with: skip the step
            skipped += 1
            continue
        lp, lm = bt_loss(both[0], train), bt_loss(both[1], train)
        if not (np.isfinite(lp) and np.isfinite(lm)):
            skipped += 1
            continue
        u = u - learning_rate * len(train) * (lp - lm) / (2 * perturbation) * delta  # gradient of the summed NLL
    theta = _theta(theta0, u)
    tuned = segment_returns(theta[None, :])[0]
    rec = {"pairs": len(pairs), "train_pairs": len(train), "held_out_pairs": len(held), "iterations": iterations,
           "skipped_steps": skipped,
           "train_loss": [bt_loss(base, train), bt_loss(tuned, train)],
           "held_out_loss": [bt_loss(base, held), bt_loss(tuned, held)],
           "accuracy": [pair_accuracy(base, pairs), pair_accuracy(tuned, pairs)]}
    if len(held):
        accepted = rec["held_out_loss"][1] <= rec["held_out_loss"][0]
    else:
        accepted = rec["train_loss"][1] < rec["train_loss"][0]
    return FitResult(theta0, theta if accepted else theta0, bool(accepted), rec)


# -- the alignment stage --------------------------------------------------------------------------------------
@register("alignment", "none")
def _no_alignment(cfg: BirdConfig, state: SearchState, generator: Generator, cands: list[Candidate]) -> None:
    return None


def _align_one(cfg: BirdConfig, state: SearchState, cand: Candidate, rows: np.ndarray, seg_of_row: np.ndarray,
               pairs: np.ndarray, rng: np.random.Generator) -> dict[str, Any]:
    literals = get("tunable", cfg.alignment.tunable)(cand.code)
    if len(literals) == 0:
        return {"applied": False, "reason": "no float literal to tune"}
    store = state.trajectories
    n_seg = int(seg_of_row.max()) + 1

    try:
        with ThetaProgram(cand.code, literals, state.spec.obs_index, store.obs[rows], store.actions[rows],
                          store.next_obs[rows], max(cfg.verify.call_timeout_s, 30.0), cfg.verify.memory_mb) as prog:
            def segment_returns(thetas: np.ndarray) -> np.ndarray:
                r = prog(thetas)
                return np.stack([np.bincount(seg_of_row, weights=row, minlength=n_seg) for row in r])

            fit = fit_literals(segment_returns, literals.values, pairs, iterations=cfg.alignment.iterations,
                               learning_rate=cfg.alignment.learning_rate, perturbation=cfg.alignment.perturbation,
                               train_fraction=cfg.alignment.train_fraction, rng=rng)
    except RewardProgramError as exc:
        return {"applied": False, "reason": f"the program failed on the segments: {exc.failure.reason}"}
    record = {"applied": fit.accepted, "literals": len(literals), "theta0": fit.theta0.tolist(),
              "theta": fit.theta.tolist(), **fit.record}
    if fit.accepted:
        record["original_code"] = cand.code
        cand.code = substitute(cand.code, literals, fit.theta)
        cand.verified = None  # the checks run again on the tuned program
    return record


def _record(state: SearchState, cand: Candidate, record: dict[str, Any]) -> None:
    state.records.setdefault(cand.id, {})["alignment.json"] = record


@register("alignment", "bradley_terry_segments")
def _bradley_terry_segments(cfg: BirdConfig, state: SearchState, generator: Generator, cands: list[Candidate]) -> None:
    """Label segment pairs (alignment.labeller), then tune every new live candidate's literals on them."""
    live = [c for c in cands if c.alive and c.code]
    store = state.trajectories
    if not live:
        return
    if store is None or len(store) == 0:
        for c in live:
            _record(state, c, {"applied": False, "reason": "no stored trajectories yet"})
        return
    seed = int(np.random.SeedSequence([state.seed, state.iteration, len(state.candidates)]).generate_state(1)[0])
    segments = cut_segments(store, cfg.alignment.target_segments, cfg.alignment.min_segment_len, random.Random(seed))
    pairs = sample_pairs(len(segments), cfg.alignment.max_pairs, random.Random(seed + 1))
    labels = get("segment_labeller", cfg.alignment.labeller)(cfg, state, generator, segments, pairs)
    labelled = labels["pairs"]
    if len(labelled) == 0:
        for c in live:
            _record(state, c, {"applied": False, "reason": "no segment pair was labelled", "labels": labels["record"]})
        return
    rows = np.concatenate(segments)
    seg_of_row = np.repeat(np.arange(len(segments)), [len(s) for s in segments])
    for i, cand in enumerate(live):
        rec = _align_one(cfg, state, cand, rows, seg_of_row, labelled, np.random.default_rng([seed, i]))
        _record(state, cand, {**rec, "segments": len(segments), "labels": labels["record"]})
