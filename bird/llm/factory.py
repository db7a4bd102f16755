"""Build the configured generator: registry family `llm` -> response cache -> journal (accounting + budget caps)."""

from __future__ import annotations

import warnings
from pathlib import Path

from bird import registry
from bird.config.roles import judge_llm_config
from bird.config.schema import BudgetConfig, JudgeConfig, LLMConfig
from bird.llm.base import Generator
from bird.llm.cache import CACHE_MODES, CachingGenerator, ResponseCache
from bird.llm.journal import JournalGenerator

__all__ = ["make_generator", "make_judge", "judge_llm_config"]


def _build(cfg: LLMConfig) -> Generator:
    """Backend from the registry, behind the response cache when it is cacheable and the cache is on."""
    if cfg.cache not in CACHE_MODES:
        raise ValueError(f"llm.cache={cfg.cache!r}; allowed: {list(CACHE_MODES)}")
    factory = registry.get("llm", cfg.backend)
    inner: Generator = factory(cfg)  # an HTTP backend checks its key here (MissingAPIKeyError)
    if inner.cacheable and cfg.cache != "off":
        inner = CachingGenerator(inner, ResponseCache(cfg.cache_dir), cfg.cache)
    return inner


def make_generator(cfg: LLMConfig, budget: BudgetConfig, journal_path: Path | None = None) -> JournalGenerator:
    """Instantiate `llm.backend`, put the response cache in front of it, and wrap it with accounting and caps.

    Raises MissingAPIKeyError (a ValueError naming the variable to set) before any work when a key is missing.
    """
    inner = _build(cfg)
    if inner.cacheable and budget.max_cost_usd is not None and not any(cfg.price_per_mtok.values()):
        warnings.warn(
            f"budget.max_cost_usd={budget.max_cost_usd} is set but llm.price_per_mtok is all zero: "
            "the cost cap will never stop generation; set llm.price_per_mtok for the model",
            stacklevel=2,
        )
    return JournalGenerator(inner, journal_path, budget.max_llm_calls, budget.max_cost_usd)


def make_judge(llm: LLMConfig, judge: JudgeConfig, generator: JournalGenerator) -> JournalGenerator:
    """The judge/evaluator generator; shares the generator's journal, totals and budget caps."""
    return generator.share(_build(judge_llm_config(llm, judge)))
