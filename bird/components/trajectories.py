"""The trajectory store (rollouts of policies whose reward passed the screens) and the TPE screen (CARD's
Trajectory Preference Evaluation): a new reward must rank stored successful trajectories above failed ones."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bird.components.demo_views import state_dict
from bird.config.schema import BirdConfig
from bird.envs.registry import suite_defines_success
from bird.learners.rollouts import load_rollouts
from bird.registry import register
from bird.reward.factory import open_program
from bird.reward.sandbox import RewardProgramError
from bird.state import SearchState
from bird.state_codec import register_saved
from bird.types import Candidate, Failure, FailureKind

__all__ = ["TrajectoryStore", "add_rollouts", "tpe_rule"]


@register_saved
@dataclass
class TrajectoryStore:
    """Episodes flattened episode-major: obs/actions/next_obs (N, ·), episode (N,), and per episode a success label."""

    obs: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    actions: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    next_obs: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    episode: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    success: list[bool] = field(default_factory=list)
    source: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.success)

    def add(self, data: dict[str, np.ndarray], success: np.ndarray, source: str) -> None:
        shift = len(self.success)
        parts = {k: data[k].astype(np.float64) for k in ("obs", "actions", "next_obs")}
        if shift == 0:
            self.obs, self.actions, self.next_obs = parts["obs"], parts["actions"], parts["next_obs"]
            self.episode = data["episode"].astype(int)
        else:
            self.obs = np.concatenate([self.obs, parts["obs"]])
            self.actions = np.concatenate([self.actions, parts["actions"]])
            self.next_obs = np.concatenate([self.next_obs, parts["next_obs"]])
            self.episode = np.concatenate([self.episode, data["episode"].astype(int) + shift])
        self.success += [bool(s) for s in success]
        self.source += [source] * len(success)

    @property
    def dones(self) -> np.ndarray:
        out = np.zeros(len(self.episode), dtype=bool)
        out[:-1] = self.episode[1:] != self.episode[:-1]
        out[-1:] = True
        return out


def add_rollouts(state: SearchState, cid: str, path: str, success_score: float) -> None:
    """Append a trained candidate's collected rollouts; an episode succeeded when its score >= success_score, on a
    suite whose benchmark score is a success flag (Meta-World). Elsewhere no episode is a success, so the TPE store is
    one-sided and the screen passes every reward (BIRD Table 8 note a)."""
    data = load_rollouts(path)
    if state.trajectories is None:
        state.trajectories = TrajectoryStore()
    flagged = suite_defines_success(state.spec.suite)  # the benchmark score is the success flag there
    success = data["score"] >= success_score if flagged else np.zeros(len(data["score"]), dtype=bool)
    state.trajectories.add(data, success, cid)


def tpe_rule(success_scores: np.ndarray, failure_scores: np.ndarray, threshold: float) -> dict[str, Any]:
    """CARD's released rule (utils.py trajectories_return_check): the fraction of successful trajectories whose
    per-step score is strictly above the best failed one; pass iff >= threshold. An empty or one-sided store
    passes vacuously (rate 1.0)."""
    n_s, n_f = len(success_scores), len(failure_scores)
    if n_s == 0 or n_f == 0:
        return {"pass": True, "vacuous": True, "rate": 1.0, "n_success": n_s, "n_failure": n_f, "n_below": 0,
                "threshold": threshold}
    best_failure = float(np.max(failure_scores))
    above = int((success_scores > best_failure).sum())
    rate = above / n_s
    return {"pass": rate >= threshold, "vacuous": False, "rate": rate, "n_success": n_s, "n_failure": n_f,
            "n_below": n_s - above, "threshold": threshold}


def _episode_view(cfg: BirdConfig, state: SearchState, store: TrajectoryStore, reward: np.ndarray, ep: int) -> dict[str, Any]:
    idx = np.flatnonzero(store.episode == ep)
    stride = cfg.feedback.trajectory_stride
    rows = [{"step": k + 1, "reward": round(float(reward[i]), 2), "state": state_dict(state.spec, store.next_obs[i])}
            for k, i in enumerate(idx) if k % stride == 0 or k == len(idx) - 1]
    total = float(reward[idx].sum())
    view = {"return": total, "length": int(len(idx)), "per_step": total / len(idx), "rows": rows}
    return {**view, "solved": store.success[ep]} if suite_defines_success(state.spec.suite) else view


@register("screen", "tpe")
def _tpe(cand: Candidate, cfg: BirdConfig, state: SearchState) -> tuple[Failure | None, dict[str, Any]]:
    """Re-score the stored trajectories with the candidate's reward (undiscounted mean per step) and apply tpe_rule."""
    store: TrajectoryStore | None = state.trajectories
    if store is None or len(store) == 0:
        return None, tpe_rule(np.zeros(0), np.zeros(0), cfg.verify.tpe_threshold)
    try:
        with open_program(cand.code or "", state.spec, cfg.verify, cfg.reward, bulk=True) as program:
            reward, _ = program(store.obs, store.actions, store.next_obs, dones=store.dones, reset=True)
    except RewardProgramError as exc:
        return exc.failure, {"pass": False, "error": exc.failure.reason}
    per_step = np.array([reward[store.episode == e].mean() for e in range(len(store))])
    ok = np.array(store.success)
    verdict = tpe_rule(per_step[ok], per_step[~ok], cfg.verify.tpe_threshold)
    verdict["store_episodes"] = len(store)
    if not verdict["vacuous"]:
        succ, fail = np.flatnonzero(ok), np.flatnonzero(~ok)
        verdict["worst_success"] = _episode_view(cfg, state, store, reward, int(succ[np.argmin(per_step[succ])]))
        verdict["best_failure"] = _episode_view(cfg, state, store, reward, int(fail[np.argmax(per_step[fail])]))
    if verdict["pass"]:
        return None, verdict
    return Failure(FailureKind.SCREENED, f"TPE: {verdict['rate']:.2f} of successful trajectories outscore the best "
                                         f"failed one (threshold {verdict['threshold']:g})"), verdict
