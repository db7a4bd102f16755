"""Reward forms (registry family reward_form): how the harness turns a program's output into the training reward.

The program never sees the success flag or the reference reward; the harness adds them here, after the sandbox call.
- direct: the program's reward as it is.
- potential_shaping: PRM4RL §4.2 Eq. (R^PRM) = γ·Φ(s′) − Φ(s) + 𝕀(success(s′))·r_bonus (Ng et al. 1999), γ = the learner's
  γ; Φ(s′) = 0 when s′ is a true terminal state, and kept at a time-limit truncation (the episode is cut, not over).
- raw_progress: r = Φ(s′), PRM4RL's "w.o. potential reward" ablation (§5.2.2, Figs 5–6: reward hacking).
- reference: the env's shipped reward; the program only supplies Ψ for the subtask prior (PRM4RL "w.o. prm", §5.2.2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bird.registry import register

__all__ = ["Transitions", "potential_shaping"]

PROGRESS_CONTRACT = ("progress_program",)


@dataclass(frozen=True)
class Transitions:
    """Harness-side facts about a batch of transitions (rows as the program saw them)."""

    ref_rewards: np.ndarray  # (N,) the env's reward
    terminals: np.ndarray  # (N,) bool: s′ is a true terminal state (not a time-limit truncation)
    success: np.ndarray  # (N,) bool: the env's success flag at s′ (False where the suite has none)
    gamma: float
    success_bonus: float


def potential_shaping(phi: np.ndarray, phi_next: np.ndarray, tr: Transitions) -> tuple[np.ndarray, dict]:
    """γ·Φ(s′)·(1 − terminal) − Φ(s) + r_bonus·𝕀(success), with its two parts as components."""
    shaping = tr.gamma * np.where(tr.terminals, 0.0, phi_next) - phi
    bonus = tr.success_bonus * tr.success.astype(np.float64)
    return shaping + bonus, {"shaping": shaping, "success_bonus": bonus}


@register("reward_form", "direct")
def _direct(reward: np.ndarray, comps: dict[str, np.ndarray], tr: Transitions) -> tuple[np.ndarray, dict]:
    return reward, comps


def _progress(comps: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray, dict]:
    kept = {k: comps[k] for k in ("potential", "subtask") if k in comps}
    return comps["potential_prev"], comps["potential"], kept


@register("reward_form", "potential_shaping", needs={"reward.contract": PROGRESS_CONTRACT}, needs_task=("success_flag",))
def _potential(reward: np.ndarray, comps: dict[str, np.ndarray], tr: Transitions) -> tuple[np.ndarray, dict]:
    phi, phi_next, kept = _progress(comps)
    r, parts = potential_shaping(phi, phi_next, tr)
    return r, {**parts, **kept}


@register("reward_form", "raw_progress", needs={"reward.contract": PROGRESS_CONTRACT})
def _raw_progress(reward: np.ndarray, comps: dict[str, np.ndarray], tr: Transitions) -> tuple[np.ndarray, dict]:
    _, phi_next, kept = _progress(comps)
    return phi_next.copy(), kept


@register("reward_form", "reference", needs={"reward.contract": PROGRESS_CONTRACT}, needs_task=("reference_reward",))
def _reference(reward: np.ndarray, comps: dict[str, np.ndarray], tr: Transitions) -> tuple[np.ndarray, dict]:
    _, _, kept = _progress(comps)
    return tr.ref_rewards.astype(np.float64), kept
