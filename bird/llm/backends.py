"""Registers the HTTP backends (`llm=anthropic`, `llm=openai`). SDKs are imported only when one is built."""

from __future__ import annotations

from bird.config.schema import LLMConfig
from bird.llm.base import Generator
from bird.registry import register

__all__: list[str] = []


@register("llm", "anthropic")
def _anthropic(cfg: LLMConfig) -> Generator:
    from bird.llm.anthropic_backend import make_anthropic

    return make_anthropic(cfg)


@register("llm", "openai")
def _openai(cfg: LLMConfig) -> Generator:
    from bird.llm.openai_backend import make_openai

    return make_openai(cfg)
