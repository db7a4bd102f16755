"""The price table: USD per million tokens by provider and model (conf/llm/prices/<provider>.yaml), each price with
its source and date, and the cost of one call from its token counts. `llm.price_per_mtok` overrides the table."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from bird.config.load import CONF_DIR

__all__ = ["Price", "Usage", "PRICE_KEYS", "PRICES_DIR", "price_for", "resolve_price", "call_cost"]

PRICES_DIR = CONF_DIR / "llm" / "prices"
#: What a price may set: input, output, cached_input (a prompt-cache read), cache_write (a prompt-cache write),
#: batch (the multiplier a provider's batch API applies to every price).
PRICE_KEYS = ("input", "output", "cached_input", "cache_write", "batch")


@dataclass(frozen=True)
class Price:
    """USD per million tokens. A cache price left out costs as input; `batch` multiplies every price in batch mode."""

    input: float = 0.0
    output: float = 0.0
    cached_input: float | None = None
    cache_write: float | None = None
    batch: float = 1.0
    source: str = ""
    date: str = ""

    @property
    def free(self) -> bool:
        return not (self.input or self.output)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, "")}


@dataclass(frozen=True)
class Usage:
    """One call's tokens: `input` counts every prompt token, `cached_input` and `cache_write` are parts of it."""

    input: int = 0
    output: int = 0
    cached_input: int = 0
    cache_write: int = 0


def _price(values: dict[str, Any], where: str) -> Price:
    if not isinstance(values, dict):
        raise ValueError(f"{where}: a price is a mapping of {list(PRICE_KEYS)} (+ source, date)")
    unknown = set(values) - set(PRICE_KEYS) - {"source", "date"}
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}; allowed: {list(PRICE_KEYS)} (+ source, date)")
    numbers = {k: float(values[k]) for k in PRICE_KEYS if values.get(k) is not None}
    if any(v < 0 for v in numbers.values()):
        raise ValueError(f"{where}: a price is never negative ({numbers})")
    return Price(**numbers, source=str(values.get("source", "")), date=str(values.get("date", "")))


@cache
def _table(folder: Path) -> dict[str, dict[str, Price]]:
    out: dict[str, dict[str, Price]] = {}
    for path in sorted(folder.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        out[path.stem] = {str(m): _price(v, f"{path}: {m}") for m, v in data.items()}
    return out


def price_for(provider: str, model: str, folder: Path = PRICES_DIR) -> Price | None:
    """The table's price of `model` at `provider` (None when the table has none)."""
    return _table(folder).get(provider, {}).get(model)


def resolve_price(provider: str, model: str, override: dict[str, float] | None) -> Price | None:
    """`override` (llm.price_per_mtok) when set, else the table's entry; None when neither has one."""
    if override is not None:
        return _price(dict(override), "llm.price_per_mtok")
    return price_for(provider, model)


def call_cost(usage: Usage, price: Price | None, batch: bool = False) -> float:
    """USD for one call: uncached input, cache reads and cache writes each at their price, output at its price,
    all times `price.batch` for a batch call; 0 without a price."""
    if price is None:
        return 0.0
    cached = min(usage.cached_input, usage.input)
    written = min(usage.cache_write, usage.input - cached)
    read_price = price.input if price.cached_input is None else price.cached_input
    write_price = price.input if price.cache_write is None else price.cache_write
    usd = ((usage.input - cached - written) * price.input + cached * read_price + written * write_price
           + usage.output * price.output) / 1e6
    return usd * (price.batch if batch else 1.0)
