"""The progress screen (registry family screen, `progress_expert`) for progress_program candidates (PRM4RL):
Ψ is an int in [0, K) and Φ finite (the worker enforces both per call), Φ bounded by verify.progress_bound, and along
scripted-expert episodes Ψ reaches K−1 and Φ is roughly non-decreasing (rises overall, and at most
verify.progress_max_drop_fraction of its variation goes down). Measured and recorded in screens.jsonl."""

from __future__ import annotations

from typing import Any

import numpy as np

from bird.config.schema import BirdConfig
from bird.envs.demos import load_demos
from bird.envs.registry import make_adapter
from bird.registry import register
from bird.reward.factory import open_program
from bird.reward.sandbox import RewardProgramError
from bird.state import SearchState
from bird.types import Candidate, Failure, FailureKind

__all__ = ["expert_progress"]


def expert_progress(phi: np.ndarray, psi: np.ndarray, k: int, episode: np.ndarray) -> dict[str, Any]:
    """Per-episode Ψ maximum and Φ's direction: drop_fraction = downward share of Φ's total variation
    (0 = non-decreasing, 1 = non-increasing); rises = Φ ends above where it started in every episode."""
    down = total = 0.0
    reached, rises = [], []
    for e in np.unique(episode):
        d = np.diff(phi[episode == e])
        down += float(np.clip(-d, 0, None).sum())
        total += float(np.abs(d).sum())
        reached.append(int(psi[episode == e].max()) == k - 1)
        rises.append(bool(phi[episode == e][-1] > phi[episode == e][0]))
    return {"psi_reaches_last": all(reached), "episodes_reaching_last": int(sum(reached)), "phi_rises": all(rises),
            "drop_fraction": down / total if total > 0 else 0.0, "phi_start": float(phi[0]), "phi_end": float(phi[-1]),
            "psi_max": int(psi.max())}


def _expert_rows(cfg: BirdConfig, state: SearchState) -> tuple[np.ndarray, np.ndarray] | None:
    """(next_obs (N, D), episode (N,)) of scripted-expert episodes, or None when the suite has no scripted expert."""
    if not hasattr(make_adapter(cfg.env), "expert_policy"):
        return None
    d = load_demos(cfg.env.id, cfg.verify.progress_expert_episodes, cfg.demos.seed, "expert")
    n, t, dim = d.next_obs.shape
    obs = np.concatenate([d.obs[:, :1], d.next_obs], axis=1).reshape(n * (t + 1), dim)
    return obs.astype(np.float64), np.repeat(np.arange(n), t + 1)


@register("screen", "progress_expert")
def _progress_expert(cand: Candidate, cfg: BirdConfig, state: SearchState) -> tuple[Failure | None, dict[str, Any]]:
    batch = state.smoke_batch
    rows = _expert_rows(cfg, state)
    try:
        with open_program(cand.code or "", state.spec, cfg.verify, contract="progress_program", bulk=True) as program:
            _, smoke = program(batch["obs"], batch["actions"], batch["next_obs"])
            k = len(program.plan_list)
            verdict: dict[str, Any] = {"plan_list": program.plan_list, "K": k}
            phis = [smoke["potential_prev"], smoke["potential"]]
            if rows is not None:
                obs, episode = rows
                _, ex = program(obs, np.zeros((len(obs), 1)), obs)
                phis.append(ex["potential"])
                verdict["expert"] = expert_progress(ex["potential"], ex["subtask"].astype(int), k, episode)
            else:
                verdict["expert"] = {"skipped": f"{cfg.env.id}: the suite has no scripted expert policy"}
    except RewardProgramError as exc:  # Ψ outside [0, K), non-int, non-finite Φ, a crash
        return exc.failure, {"pass": False, "error": exc.failure.reason}
    bound = float(np.abs(np.concatenate(phis)).max())
    verdict.update(phi_abs_max=bound, phi_bound=cfg.verify.progress_bound, psi_in_range=True, phi_finite=True)
    problems = []
    if bound > cfg.verify.progress_bound:
        problems.append(f"|Φ| reaches {bound:.3g} > verify.progress_bound={cfg.verify.progress_bound:g}")
    ex = verdict["expert"]
    if "skipped" not in ex:
        if not ex["psi_reaches_last"]:
            problems.append(f"Ψ reaches K−1={k - 1} in {ex['episodes_reaching_last']} of the expert episodes only "
                            f"(max Ψ {ex['psi_max']})")
        if ex["drop_fraction"] > cfg.verify.progress_max_drop_fraction or not ex["phi_rises"]:
            problems.append(f"Φ is not roughly non-decreasing along the expert: {ex['drop_fraction']:.1%} of its variation "
                            f"drops (verify.progress_max_drop_fraction={cfg.verify.progress_max_drop_fraction:g}), "
                            f"start {ex['phi_start']:.3g} → end {ex['phi_end']:.3g}")
    verdict["pass"], verdict["problems"] = not problems, problems
    if problems:
        return Failure(FailureKind.SCREENED, "progress screen: " + "; ".join(problems)), verdict
    return None, verdict
