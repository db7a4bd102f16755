"""Accounting and budget caps: journal lines, totals, cache hits, deterministic batch admission, judge sharing."""

from __future__ import annotations

import json

import pytest

from bird.config.schema import BudgetConfig, JudgeConfig, LLMConfig
from bird.llm.base import BudgetExhausted, Generator, Message, Request, Response
from bird.llm.factory import judge_llm_config, make_generator, make_judge
from bird.llm.journal import JournalGenerator

from .conftest import llm_cfg
from .fake_servers import FakeLLMServer


def _req(i: int, purpose: str = "reward") -> Request:
    return Request(purpose=purpose, messages=(Message("user", "one two three"),), sample_index=i)


class _Priced(Generator):
    """Answers everything; each answer costs 0.25 USD."""

    def complete(self, request: Request) -> Response:
        return Response("ok", self.model, 3, 1, cost_usd=0.25)


def test_max_llm_calls_admits_a_batch_in_order_and_refuses_the_rest():
    gen = JournalGenerator(_Priced("m", 4), None, max_calls=3)
    out = gen.complete_many([_req(i) for i in range(5)])
    assert [type(r).__name__ for r in out] == ["Response"] * 3 + ["BudgetExhausted"] * 2
    with pytest.raises(BudgetExhausted, match="max_llm_calls=3"):
        gen.complete(_req(9))
    assert gen.totals()["calls"] == 3


def test_max_cost_usd_stops_the_next_batch_once_reached():
    gen = JournalGenerator(_Priced("m", 4), None, max_cost_usd=0.5)
    first = gen.complete_many([_req(i) for i in range(3)])  # starts under the cap: runs whole (0.75 USD)
    second = gen.complete_many([_req(i) for i in range(2)])
    assert all(isinstance(r, Response) for r in first)
    assert all(isinstance(r, BudgetExhausted) for r in second)
    assert gen.totals()["cost_usd"] == pytest.approx(0.75)


def test_journal_records_purpose_tokens_cost_and_cache_hits(wire, with_key, tmp_path):
    journal = tmp_path / "llm_calls.jsonl"
    with FakeLLMServer(wire, "four words of answer") as srv:
        cfg = llm_cfg(wire, srv, tmp_path, cache="readwrite", price_per_mtok={"input": 1e6, "output": 2e6})
        gen = make_generator(cfg, BudgetConfig(), journal)
        gen.complete(_req(0))
        gen.complete(_req(0, purpose="mutation"))  # same messages: a cache hit
    lines = [json.loads(x) for x in journal.read_text().splitlines()]
    assert [x["purpose"] for x in lines] == ["reward", "mutation"]
    assert [x["cached"] for x in lines] == [False, True]
    assert lines[0]["input_tokens"] == 3 and lines[0]["output_tokens"] == 4
    assert lines[0]["cost_usd"] == pytest.approx(3 + 8) and lines[1]["cost_usd"] == 0.0
    assert lines[1]["uncached_cost_usd"] == pytest.approx(11)
    assert {"model", "provider", "latency_s", "attempts", "finish_reason", "error"} <= set(lines[0])
    t = gen.totals()
    assert (t["calls"], t["cached_calls"], t["cost_usd"], t["uncached_cost_usd"]) == (2, 1, 11, 22)


def test_cache_hits_count_toward_budget_so_replay_stops_at_the_same_point(wire, with_key, tmp_path):
    with FakeLLMServer(wire, "answer") as srv:
        cfg = llm_cfg(wire, srv, tmp_path, cache="readwrite", price_per_mtok={"input": 1e5, "output": 0.0})
        budget = BudgetConfig(max_cost_usd=0.5)  # each answer costs 0.3 (3 input tokens)
        runs = []
        for _ in range(2):
            gen = make_generator(cfg, budget)
            runs.append([type(gen.complete_many([_req(i)])[0]).__name__ for i in range(4)])
        assert len(srv.requests) == 2
    assert runs[0] == runs[1] == ["Response", "Response", "BudgetExhausted", "BudgetExhausted"]


def test_failed_calls_are_journalled_with_the_error(wire, with_key, tmp_path):
    journal = tmp_path / "j.jsonl"
    with FakeLLMServer(wire, "ok", faults=["400"]) as srv:
        gen = make_generator(llm_cfg(wire, srv, tmp_path), BudgetConfig(), journal)
        out = gen.complete_many([_req(0)])
    line = json.loads(journal.read_text())
    assert "HTTP 400" in line["error"] and "HTTP 400" in str(out[0])
    assert gen.totals()["failed_calls"] == 1


def test_cost_cap_without_prices_warns(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    with pytest.warns(UserWarning, match="cost cap will never stop generation"):
        make_generator(llm_cfg("openai", None, tmp_path), BudgetConfig(max_cost_usd=1.0))


def test_judge_defaults_to_the_generator_backend_and_shares_the_budget(wire, with_key, tmp_path):
    with FakeLLMServer(wire, "ok") as srv:
        cfg = llm_cfg(wire, srv, tmp_path)
        gen = make_generator(cfg, BudgetConfig(max_llm_calls=2), tmp_path / "j.jsonl")
        judge = make_judge(cfg, JudgeConfig(temperature=0.0), gen)
        gen.complete(_req(0))
        judge.complete(_req(1, purpose="judge"))
        with pytest.raises(BudgetExhausted):
            judge.complete(_req(2, purpose="judge"))
    assert judge.model == cfg.model and srv.requests[1]["temperature"] == 0.0
    assert gen.totals()["calls"] == 2
    assert len((tmp_path / "j.jsonl").read_text().splitlines()) == 2


def test_judge_on_another_backend_needs_its_own_model():
    llm = LLMConfig(backend="openai", model="gpt-x", base_url="http://127.0.0.1:1/v1", price_per_mtok={"input": 1.0})
    with pytest.raises(ValueError, match="set judge.model"):
        judge_llm_config(llm, JudgeConfig(backend="anthropic"))
    j = judge_llm_config(llm, JudgeConfig(backend="anthropic", model="claude-x"))
    assert (j.backend, j.model, j.base_url, j.price_per_mtok) == ("anthropic", "claude-x", None, None)
    same = judge_llm_config(llm, JudgeConfig())
    assert (same.backend, same.model, same.base_url, same.price_per_mtok) == ("openai", "gpt-x", llm.base_url, {"input": 1.0})
