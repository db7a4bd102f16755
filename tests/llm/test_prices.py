"""The price table (conf/llm/prices/) and the cost of a call: cache reads, cache writes and batch calls at their
own prices; a paid provider without a price is a warning."""

from __future__ import annotations

import pytest

from bird.config.schema import BudgetConfig
from bird.llm.factory import make_generator
from bird.llm.prices import PRICES_DIR, Price, Usage, call_cost, price_for, resolve_price

from .conftest import llm_cfg


def test_every_table_price_names_its_source_and_date():
    files = sorted(PRICES_DIR.glob("*.yaml"))
    assert {p.stem for p in files} >= {"anthropic", "openai"}
    for path in files:
        for model in __import__("yaml").safe_load(path.read_text()):
            price = price_for(path.stem, model)
            assert price is not None and price.source and len(price.date) == 10, (path.stem, model)


def test_call_cost_prices_cache_reads_writes_and_batch_separately():
    price = Price(input=2.0, output=10.0, cached_input=0.1, cache_write=2.5, batch=0.5)
    # 1M prompt tokens: 600k read from the cache, 100k written to it, 300k plain; 100k output
    usage = Usage(input=1_000_000, output=100_000, cached_input=600_000, cache_write=100_000)
    expected = 0.3 * 2.0 + 0.6 * 0.1 + 0.1 * 2.5 + 0.1 * 10.0  # 0.6 + 0.06 + 0.25 + 1.0
    assert call_cost(usage, price) == pytest.approx(expected)
    assert call_cost(usage, price, batch=True) == pytest.approx(expected / 2)
    assert call_cost(Usage(1_000_000, 0, cached_input=1_000_000), Price(input=2.0)) == pytest.approx(2.0)  # no cache price
    assert call_cost(usage, None) == 0.0


def test_price_override_replaces_the_table_and_rejects_unknown_keys():
    assert resolve_price("anthropic", "claude-sonnet-5-5", None) == price_for("anthropic", "claude-sonnet-5-5")
    assert resolve_price("anthropic", "claude-sonnet-5-5", {"input": 1.0, "output": 3.0}).cached_input is None
    assert resolve_price("openai", "no-such-model", None) is None
    with pytest.raises(ValueError, match=r"unknown keys \['inptu'\]"):
        resolve_price("openai", "x", {"inptu": 1.0})


def test_a_paid_provider_without_a_price_warns_and_a_local_server_does_not(tmp_path, monkeypatch, recwarn):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    with pytest.warns(UserWarning, match=r"model=test-model has no price in conf/llm/prices/openai.yaml"):
        make_generator(llm_cfg("openai", None, tmp_path), BudgetConfig())
    recwarn.clear()
    cfg = llm_cfg("openai", None, tmp_path, base_url="http://127.0.0.1:8000/v1")
    make_generator(cfg, BudgetConfig())  # a local server: free, no warning
    make_generator(llm_cfg("openai", None, tmp_path, model="gpt-6.1-sol"), BudgetConfig())  # priced by the table
    assert not [w for w in recwarn if "price" in str(w.message)]
