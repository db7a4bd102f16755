"""Verify: static checks, then a smoke run in the sandbox on real transitions. Failures are recorded, not raised."""

from __future__ import annotations

from typing import Any

import numpy as np

from bird.config.schema import BirdConfig
from bird.envs.base import TaskAdapter
from bird.registry import get, register
from bird.reward.sandbox import RewardProgramError, SandboxedReward
from bird.reward.static import check_source
from bird.state import SearchState
from bird.types import Candidate, Failure, VerifyResult

__all__ = ["verify", "verify_code", "screen", "random_transitions"]


@register("check", "static")
def _static(code: str, cfg: BirdConfig, batch: dict[str, np.ndarray], spec: Any) -> tuple[Failure | None, dict]:
    from bird.reward.static import CONTRACT_ENTRIES

    contract = cfg.reward.contract
    return check_source(code, CONTRACT_ENTRIES[contract], contract=contract), {}


@register("check", "smoke")
def _smoke(code: str, cfg: BirdConfig, batch: dict[str, np.ndarray], spec: Any) -> tuple[Failure | None, dict]:
    try:
        with SandboxedReward(code, spec.obs_index, cfg.verify.call_timeout_s, cfg.verify.memory_mb,
                             contract=cfg.reward.contract) as program:
            reward, comps = program(batch["obs"], batch["actions"], batch["next_obs"], dones=batch.get("dones"),
                                    reset=True)
            inactive = program.inactive_layers  # isolation layers this machine lacks: named, never silent
    except RewardProgramError as exc:
        return exc.failure, {}
    stats = {name: {"mean": float(v.mean()), "std": float(v.std())} for name, v in {"reward": reward, **comps}.items()}
    return None, {"components": list(comps), "stats": stats, **({"inactive_layers": inactive} if inactive else {})}


def random_transitions(adapter: TaskAdapter, steps: int, seed: int) -> dict[str, np.ndarray]:
    """Transitions of a uniform-random policy (the smoke check's input)."""
    env = adapter.make_env()
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    rows: dict[str, list] = {"obs": [], "actions": [], "next_obs": [], "dones": []}
    for _ in range(steps):
        action = env.action_space.sample()
        nxt, _, term, trunc, _ = env.step(action)
        rows["obs"].append(obs)
        rows["actions"].append(action)
        rows["next_obs"].append(nxt)
        rows["dones"].append(float(term or trunc))
        obs = env.reset()[0] if term or trunc else nxt
    env.close()
    return {k: np.asarray(v, dtype=np.float64) for k, v in rows.items()}


def verify_code(code: str, cfg: BirdConfig, batch: dict[str, np.ndarray], spec: Any) -> VerifyResult:
    """Run the configured checks in order; stop at the first failure."""
    checks: dict[str, Any] = {}
    components: tuple[str, ...] = ()
    for name in cfg.verify.checks:
        failure, info = get("check", name)(code, cfg, batch, spec)
        checks[name] = {"ok": failure is None, **info}
        if failure is not None:
            return VerifyResult(False, failure, (), checks)
        components = tuple(info.get("components", components))
    return VerifyResult(True, None, components, checks)


def screen(cfg: BirdConfig, state: SearchState, cand: Candidate, result: VerifyResult) -> VerifyResult:
    """Run verify.screens in order; the first that fails screens the candidate out (no training)."""
    checks = dict(result.checks)
    for name in cfg.verify.screens:
        failure, verdict = get("screen", name)(cand, cfg, state)
        checks[name] = {"ok": failure is None, **verdict}
        state.screens.setdefault(cand.id, {})[name] = {"ok": failure is None, **verdict}
        if failure is not None:
            return VerifyResult(False, failure, result.components, checks)
    return VerifyResult(result.ok, result.failure, result.components, checks)


def verify(cfg: BirdConfig, state: SearchState, cands: list[Candidate]) -> dict[str, VerifyResult]:
    """Verify every candidate with code (checks run during generate are reused), then screen the ones that pass."""
    out: dict[str, VerifyResult] = {}
    for cand in cands:
        if cand.code is None or not (cand.alive or cand.verified is not None):
            continue
        result = cand.verified or verify_code(cand.code, cfg, state.smoke_batch, state.spec)
        if result.ok and not set(cfg.verify.screens) & set(result.checks):  # not screened already (generate re-asks)
            result = screen(cfg, state, cand, result)
        out[cand.id] = result
        if not result.ok:
            cand.failure = result.failure
    return out
