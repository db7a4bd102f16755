"""The demonstration verifier (screen `demo_margin`): before training, the candidate reward must give the scripted
expert a higher episode return than every other demonstration policy; a reward with a non-positive margin is screened
out. BIRD's hill-climb v2_verify (safety-research/bird@54a9ce3:configs/_default.yaml verify.demo_screen: policies expert,
expert_noise:0.3, expert_noise:0.6, random; 2 episodes each; keep all; reject_nonpositive_margin;
configs/hillclimb/v2_verify_noes.yaml; BIRD paper Table 10 #2
"demonstration-based verifier before training"). bird has expert and uniform-random demonstrations
(bird/envs/demos.py), the same ones GRACE uses; the noisy-expert policies are a listed substitute.
Suites without a scripted expert (MuJoCo) pass every candidate, recorded as skipped."""

from __future__ import annotations

from typing import Any

import numpy as np

from bird.config.schema import BirdConfig
from bird.envs.demos import load_demos
from bird.registry import register
from bird.reward.factory import open_program
from bird.reward.sandbox import RewardProgramError, SandboxedReward
from bird.state import SearchState
from bird.types import Candidate, Failure, FailureKind

__all__ = ["SUBSTITUTE", "episode_returns"]

SUBSTITUTE = ("demo_margin screen: margin of the scripted expert over a uniform-random policy (BIRD's verifier also "
              "compares against the expert with action noise 0.3 and 0.6)")
KINDS = ("expert", "random")


def episode_returns(program: SandboxedReward, demos: Any) -> list[float]:
    """The program's return on each demonstration episode, in one sandbox call (episodes restart its state)."""
    n, t, _ = demos.obs.shape
    dones = np.zeros((n, t), dtype=bool)
    dones[:, -1] = True
    reward, _ = program(demos.obs.reshape(n * t, -1), demos.action.reshape(n * t, -1), demos.next_obs.reshape(n * t, -1),
                        dones=dones.reshape(-1), reset=True)
    return [float(r) for r in reward.reshape(n, t).sum(axis=1)]


@register("screen", "demo_margin")
def _demo_margin(cand: Candidate, cfg: BirdConfig, state: SearchState) -> tuple[Failure | None, dict[str, Any]]:
    try:
        demos = {k: load_demos(cfg.env.id, cfg.verify.demo_episodes, cfg.demos.seed, k) for k in KINDS}
    except ValueError as exc:  # no scripted expert on this suite
        return None, {"pass": True, "skipped": str(exc)}
    try:
        with open_program(cand.code or "", state.spec, cfg.verify, cfg.reward, bulk=True) as program:
            returns = {k: episode_returns(program, d) for k, d in demos.items()}
    except RewardProgramError as exc:
        return exc.failure, {"pass": False, "error": exc.failure.reason}
    if SUBSTITUTE not in state.substitutes:
        state.substitutes.append(SUBSTITUTE)
    means = {k: float(np.mean(v)) for k, v in returns.items()}
    margin = means["expert"] - max(v for k, v in means.items() if k != "expert")
    verdict = {"pass": margin > 0, "margin": margin, "mean_return": means, "returns": returns,
               "episodes": cfg.verify.demo_episodes}
    if margin > 0:
        return None, verdict
    return Failure(FailureKind.SCREENED, f"demo margin {margin:.4g} <= 0: the reward does not rank the scripted "
                                         "expert above a uniform-random policy"), verdict
