"""Verify's checks (registry family `check`): static checks, then a smoke run in the sandbox on real transitions.
`verify_code` runs the configured ones in order; a failure is returned, never raised."""

from __future__ import annotations

from typing import Any

import numpy as np

from bird.config.schema import BirdConfig
from bird.envs.base import TaskAdapter
from bird.registry import get, register
from bird.reward.factory import open_program
from bird.reward.sandbox import RewardProgramError
from bird.reward.static import CONTRACT_ENTRIES, check_source
from bird.types import Failure, VerifyResult

__all__ = ["verify_code", "random_transitions"]


@register("check", "static")
def _static(code: str, cfg: BirdConfig, batch: dict[str, np.ndarray], spec: Any) -> tuple[Failure | None, dict]:
    """Syntax, signature and the Python-level wall (bird/reward/static.py)."""
    contract = cfg.reward.contract
    return check_source(code, CONTRACT_ENTRIES[contract], contract=contract, language=cfg.reward.language or "numpy"), {}


@register("check", "smoke")
def _smoke(code: str, cfg: BirdConfig, batch: dict[str, np.ndarray], spec: Any) -> tuple[Failure | None, dict]:
    """One sandboxed call on the smoke batch: it must run and return finite values of the right shape."""
    try:
        with open_program(code, spec, cfg.verify, cfg.reward) as program:
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
