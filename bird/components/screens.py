"""Running verify.screens (registry family `screen`) on a candidate that passed its checks."""

from __future__ import annotations

from bird.config.schema import BirdConfig
from bird.registry import get
from bird.state import SearchState
from bird.types import Candidate, VerifyResult

__all__ = ["screen"]


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
