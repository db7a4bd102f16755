"""Registers the HTTP backends (`llm=anthropic`, `llm=openai`). SDKs are imported only when one is built."""

from __future__ import annotations

from bird.config.schema import LLMConfig
from bird.llm.base import Generator
from bird.registry import register

__all__: list[str] = []


def _only_default(cfg: LLMConfig) -> float:
    """While thinking, Anthropic takes only its default temperature 1.0."""
    return 1.0


def _official_only_default(cfg: LLMConfig) -> float | None:
    """api.openai.com's reasoning models take only the default temperature 1.0; a compatible server takes any."""
    return None if cfg.base_url else 1.0


@register("llm", "anthropic", reasoning_temperature=_only_default)
def _anthropic(cfg: LLMConfig) -> Generator:
    from bird.llm.anthropic_backend import make_anthropic

    return make_anthropic(cfg)


@register("llm", "openai", reasoning_temperature=_official_only_default)
def _openai(cfg: LLMConfig) -> Generator:
    from bird.llm.openai_backend import make_openai

    return make_openai(cfg)
