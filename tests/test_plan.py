"""python -m bird.plan: the calls, tokens and dollars of a search or a sweep before it runs, without network; its
call counts against what each method's smoke search actually made."""

from __future__ import annotations

import json
import socket
from collections import Counter

import pytest

from bird.config.load import CONF_DIR
from bird.plan import ROLES, llm_calls
from bird.plan import main as plan_main

METHODS = sorted(p.stem for p in (CONF_DIR / "method").glob("*.yaml"))
ROLE_OF = {purpose: role for role, purposes in ROLES.items() for purpose in purposes}


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_plan_call_counts_bracket_what_the_methods_smoke_search_made(method, method_smoke_run, method_smoke_config):
    """Per role, the planned low end <= the calls the shared smoke search journalled <= the planned high end, and a
    search with no failed candidate made exactly the nominal count."""
    run, result = method_smoke_run(method)
    journal = run / "llm_calls.jsonl"  # none for a method that asks no LLM (the oracle)
    made = Counter(ROLE_OF[json.loads(line)["purpose"]]
                   for line in (journal.read_text().splitlines() if journal.exists() else []))  # unknown: KeyError
    cfg = method_smoke_config(method)
    planned = llm_calls(cfg)
    for role, calls in planned.items():
        assert calls.lo <= made[role] <= calls.hi, (role, calls, made)
    if not result["n_failed"] and not any(c.get("resampled") for c in _candidates(run)):
        chosen = {"summary"} if cfg.feedback.summarisation == "per_candidate_per_subtask" and \
            cfg.decompose.n_subtasks is None else set()  # as many as the subtasks the generator chose
        assert {r: made[r] for r in ROLES if r not in chosen} == \
            {r: c.nominal for r, c in planned.items() if r not in chosen}


def _candidates(run):
    return [json.loads(p.read_text()) for p in run.glob("candidates/*/candidate.json")]


def test_plan_of_a_paid_sweep_prints_calls_tokens_and_dollars_without_network(monkeypatch, capsys):
    def refuse(*args, **kwargs):
        raise OSError("test: no network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert plan_main(["-m", "+sweep=bird_gym", "llm=anthropic", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["total"]["cells"] == 8 * 5 * 10 and set(out["methods"]) == {
        "eureka", "rf_agent", "revolve", "rstar", "card", "rda", "era_u", "era_s"}
    eureka = out["methods"]["eureka"]
    assert eureka["roles"]["generator"][1] == 50 * 8 * 5  # K = 8 x T = 5 per search, 50 searches
    assert out["methods"]["rf_agent"]["roles"]["generator"][1] == 50 * 38  # RF-Agent's 38 (budget=matched)
    assert out["llm"]["price"]["input"] == 2.0 and not out["warnings"]
    lo, nominal, hi = out["total"]["usd"]
    assert 0 < lo <= nominal < hi
    assert out["total"]["input_tokens"][0] > 1000 * out["total"]["calls"][1]  # real prompts, thousands of tokens each


def test_plan_warns_when_the_model_has_no_price(capsys):
    assert plan_main(["method=eureka", "budget=smoke", "llm=openai", "llm.model=gpt-unpriced"]) == 0
    text = capsys.readouterr().out
    assert "WARNING: no price for llm=openai model=gpt-unpriced" in text
    assert "eureka" in text and "4 [4-8]" in text  # K = 2 x T = 2; parse and truncation re-asks at most double it
