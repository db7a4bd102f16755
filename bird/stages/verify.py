"""Verify: the configured checks (bird/reward/checks.py), then the screens (bird/components/screens.py). Failures are
recorded on the candidate, not raised."""

from __future__ import annotations

from bird.components.screens import screen
from bird.config.schema import BirdConfig
from bird.reward.checks import verify_code
from bird.state import SearchState
from bird.types import Candidate, VerifyResult

__all__ = ["verify"]


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
