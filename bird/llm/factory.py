"""Build the configured generator: registry family `llm` -> response cache -> journal (accounting + budget caps)."""

from __future__ import annotations

import warnings
from pathlib import Path

from bird import registry
from bird.config.roles import judge_llm_config
from bird.config.schema import BudgetConfig, JudgeConfig, LLMConfig
from bird.llm.api_base import is_local_url
from bird.llm.base import Generator
from bird.llm.batch import BATCHES, BatchGenerator
from bird.llm.cache import CACHE_MODES, CachingGenerator, ResponseCache
from bird.llm.journal import JournalGenerator
from bird.llm.sweep import SweepGate, SweepLimits

__all__ = ["make_generator", "make_judge", "judge_llm_config"]


def _build(cfg: LLMConfig, sweep: SweepLimits | None = None, run_dir: Path | None = None) -> Generator:
    """Backend from the registry, behind the batch runner (llm.mode=batch; its batch ids in `run_dir`), the sweep's
    gate (a cell of a capped or throttled sweep) and the response cache when it is cacheable and the cache is on."""
    if cfg.cache not in CACHE_MODES:
        raise ValueError(f"llm.cache={cfg.cache!r}; allowed: {list(CACHE_MODES)}")
    factory = registry.get("llm", cfg.backend)
    inner: Generator = factory(cfg)  # an HTTP backend checks its key here (MissingAPIKeyError)
    if cfg.mode == "batch":
        inner = BatchGenerator(inner, run_dir / BATCHES if run_dir else None, cfg.batch_poll_s)  # type: ignore[arg-type]
    if inner.cacheable and sweep is not None:
        inner = SweepGate(inner, sweep)
    if inner.cacheable and cfg.cache != "off":
        inner = CachingGenerator(inner, ResponseCache(cfg.cache_dir), cfg.cache)
    return inner


def make_generator(cfg: LLMConfig, budget: BudgetConfig, journal_path: Path | None = None,
                   sweep: SweepLimits | None = None) -> JournalGenerator:
    """Instantiate `llm.backend`, put the response cache in front of it, and wrap it with accounting and caps.

    :param sweep: the limits this search shares with the other cells of its sweep (bird.llm.sweep).
    Raises MissingAPIKeyError (a ValueError naming the variable to set) before any work when a key is missing.
    """
    run_dir = journal_path.parent if journal_path is not None else None
    inner = _build(cfg, sweep, run_dir)
    _warn_unpriced(cfg, budget, inner)
    out = JournalGenerator(inner, journal_path, budget.max_llm_calls, budget.max_cost_usd)
    out.ledger.sweep, out.ledger.run_dir = sweep, run_dir
    return out


def _warn_unpriced(cfg: LLMConfig, budget: BudgetConfig, gen: Generator) -> None:
    """Warn when a paid provider's calls will be recorded as free, or a cost cap can never trigger."""
    if not gen.cacheable or cfg.cache == "replay":
        return  # the offline synthesiser; a replay spends nothing
    price = getattr(getattr(gen, "inner", gen), "price", None)
    if price is not None and not price.free:
        return
    where = f"llm={cfg.backend} model={cfg.model}"
    if not is_local_url(cfg.base_url) and cfg.price_per_mtok is None:
        warnings.warn(f"{where} has no price in conf/llm/prices/{cfg.backend}.yaml: its calls will be recorded at "
                      "cost_usd 0; set llm.price_per_mtok='{input: ..., output: ...}' (USD per million tokens)",
                      stacklevel=3)
    elif not is_local_url(cfg.base_url):
        warnings.warn(f"{where}: llm.price_per_mtok is 0 for a paid provider: its calls will be recorded at cost_usd 0",
                      stacklevel=3)
    if budget.max_cost_usd is not None:
        warnings.warn(f"budget.max_cost_usd={budget.max_cost_usd} is set but {where} has no price (all zero): the cost "
                      "cap will never stop generation; set llm.price_per_mtok for the model", stacklevel=3)


def make_judge(llm: LLMConfig, judge: JudgeConfig, generator: JournalGenerator) -> JournalGenerator:
    """The judge/evaluator generator; shares the generator's journal, totals and budget caps."""
    return generator.share(_build(judge_llm_config(llm, judge), generator.ledger.sweep, generator.ledger.run_dir))
