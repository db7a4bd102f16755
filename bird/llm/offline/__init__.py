"""The offline synthesiser, registered as `llm=offline`."""

from __future__ import annotations

from bird.config.schema import LLMConfig
from bird.llm.offline.synth import LABEL, OfflineSynthesiser
from bird.registry import register

__all__ = ["OfflineSynthesiser", "LABEL"]


@register("llm", "offline")
def make_offline(cfg: LLMConfig) -> OfflineSynthesiser:
    return OfflineSynthesiser(cfg.model, cfg.max_concurrency)
