"""Subtask-prior encoders (registry family obs_augment): what the policy sees appended to its observation.

PRM4RL §4.3: prior = E(plan_list[Ψ(s)]) with a sentence embedding E (SimCSE [inferred]). `subtask_onehot` is the
labelled substitute used while no sentence encoder ships offline: the subtask index as a one-hot vector. It keeps the
in-task signal but not the cross-task generalisation the paper credits to the verb+noun priors."""

from __future__ import annotations

import numpy as np

from bird.registry import register

__all__ = ["ONEHOT_SUBSTITUTE"]

ONEHOT_SUBSTITUTE = ("subtask prior encoder: one-hot subtask index instead of a sentence embedding of "
                     "plan_list[Ψ(s)] (PRM4RL §4.3, SimCSE [inferred]); no sentence encoder ships offline")


@register("obs_augment", "none")
def _none(plan_list: list[str], width: int | None = None) -> np.ndarray | None:
    """Nothing appended."""
    return None


@register("obs_augment", "subtask_onehot", needs={"reward.contract": ("progress_program",)},
          substitute=ONEHOT_SUBSTITUTE)
def _onehot(plan_list: list[str], width: int | None = None) -> np.ndarray:
    """(K, width) rows of the width × width identity, width = K unless given: row k is appended when Ψ(s) = k. A
    policy trained on K_src subtasks and run on a task whose plan has K others (stages/transfer.py) sees subtask k in
    slot min(k, K_src − 1): the one-hot carries an index, not the meaning a sentence embedding would."""
    k = len(plan_list)
    width = width or k
    return np.eye(width, dtype=np.float32)[np.minimum(np.arange(k), width - 1)]
