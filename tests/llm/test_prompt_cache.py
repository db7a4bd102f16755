"""Provider prompt caching against a local server speaking each provider's wire protocol (tests/llm/fake_provider.py):
the stable prefix marked for Anthropic, the cached and written input tokens each provider reports recorded, and the
cost computed at the price table's cache prices."""

from __future__ import annotations

import json

import pytest

from bird.config.schema import BudgetConfig
from bird.llm.base import Message, Request
from bird.llm.factory import make_generator
from bird.llm.prices import Usage, call_cost, price_for

from .conftest import llm_cfg
from .fake_provider import ProviderServer

MODEL = {"anthropic": "claude-sonnet-5-5", "openai": "gpt-6.1-sol"}
SYSTEM = "You write reward functions for reinforcement learning. " * 20
TASK = "The task: make the hopper hop forward. Observation fields: " + "x y z vx vy vz " * 30
PREFIX = len(SYSTEM.split()) + len(TASK.split())  # 329 tokens: the fake server counts words


def _dialogue(sample: int, feedback: str) -> Request:
    """An iteration-2 request of a Eureka-style dialogue: system, task (shared), an answer and its feedback (own)."""
    return Request(purpose="mutation", sample_index=sample, messages=(
        Message("system", SYSTEM), Message("user", TASK), Message("assistant", f"answer {sample}"),
        Message("user", feedback)))


def _gen(wire, srv, tmp_path, **kw):
    cfg = llm_cfg(wire, srv, tmp_path, model=MODEL[wire], **kw)
    return make_generator(cfg, BudgetConfig(), tmp_path / "llm_calls.jsonl")


def test_anthropic_marks_the_stable_prefix_and_records_cache_writes_then_reads(tmp_path):
    pytest.importorskip("anthropic")
    with ProviderServer("anthropic", "ok then") as srv:
        gen = _gen("anthropic", srv, tmp_path)
        first, second = gen.complete(_dialogue(0, "feedback one")), gen.complete(_dialogue(1, "feedback two three"))
        body = srv.requests[0]
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][0]["content"][-1]["cache_control"] == {"type": "ephemeral"}  # the task: shared
    assert all("cache_control" not in str(m["content"]) for m in body["messages"][1:])  # the turns: not
    prefix = PREFIX
    assert (first.cache_write_tokens, first.cached_input_tokens) == (prefix, 0)
    assert (second.cache_write_tokens, second.cached_input_tokens) == (0, prefix)
    assert (first.input_tokens, second.input_tokens) == (prefix + 4, prefix + 5)  # every prompt token counted
    price = price_for("anthropic", MODEL["anthropic"])
    assert first.cost_usd == pytest.approx((prefix * 2.5 + 4 * 2.0 + 2 * 10.0) / 1e6)  # the write at 2.50/MTok
    assert second.cost_usd == pytest.approx((prefix * 0.1 + 5 * 2.0 + 2 * 10.0) / 1e6)  # the read at 0.10/MTok
    assert second.cost_usd == pytest.approx(call_cost(Usage(prefix + 5, 2, prefix, 0), price))
    lines = [json.loads(x) for x in (tmp_path / "llm_calls.jsonl").read_text().splitlines()]
    assert [(x["cache_write_tokens"], x["cached_input_tokens"]) for x in lines] == [(prefix, 0), (0, prefix)]
    totals = gen.totals()
    assert (totals["cached_input_tokens"], totals["cache_write_tokens"]) == (prefix, prefix)


def test_anthropic_without_prompt_cache_sends_no_breakpoint_and_pays_full_input(tmp_path):
    pytest.importorskip("anthropic")
    with ProviderServer("anthropic", "ok then") as srv:
        gen = _gen("anthropic", srv, tmp_path, prompt_cache=False)
        first, second = gen.complete(_dialogue(0, "feedback one")), gen.complete(_dialogue(1, "feedback two three"))
        assert "cache_control" not in json.dumps(srv.requests)
    assert first.cached_input_tokens == second.cached_input_tokens == second.cache_write_tokens == 0
    assert second.cost_usd == pytest.approx(((PREFIX + 5) * 2.0 + 2 * 10.0) / 1e6)


def test_openai_cached_tokens_it_reports_are_recorded_and_priced(tmp_path):
    pytest.importorskip("openai")
    with ProviderServer("openai", "ok then") as srv:
        gen = _gen("openai", srv, tmp_path)
        first, second = gen.complete(_dialogue(0, "feedback one")), gen.complete(_dialogue(1, "feedback two three"))
        assert "cache_control" not in json.dumps(srv.requests)  # OpenAI caches prefixes on its own
    shared = PREFIX + 1  # system, task, and "answer" of the assistant turn
    assert (first.cached_input_tokens, second.cached_input_tokens) == (0, shared)
    assert second.input_tokens == PREFIX + 2 + 3
    assert second.cost_usd == pytest.approx(((PREFIX + 5 - shared) * 2.0 + shared * 0.1 + 2 * 10.0) / 1e6)


def test_a_cache_hit_keeps_the_cached_token_counts_of_the_answer(wire, tmp_path):
    pytest.importorskip(wire)
    with ProviderServer(wire, "ok then") as srv:
        gen = _gen(wire, srv, tmp_path, cache="readwrite")
        gen.complete(_dialogue(0, "feedback one"))
        made = gen.complete(_dialogue(1, "feedback two three"))
        again = gen.complete(_dialogue(1, "feedback two three"))
        assert len(srv.requests) == 2
    assert again.cached and again.cost_usd == 0.0 and again.uncached_cost_usd == pytest.approx(made.cost_usd)
    assert (again.cached_input_tokens, again.cache_write_tokens) == (made.cached_input_tokens, made.cache_write_tokens)
    assert made.cached_input_tokens > 0
