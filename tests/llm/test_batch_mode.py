"""llm.mode=batch against a local server speaking each provider's batch endpoints through the real SDKs
(tests/llm/fake_provider.py): one batch per wave at the batch price, its id kept in the run directory so a killed
process resumes the same batch, the answers in the same cache and journal (a replay needs no batch and no server)."""

from __future__ import annotations

import json

import pytest

import bird.llm.batch as batch_module
from bird.config.schema import BudgetConfig
from bird.llm.base import Message, Request
from bird.llm.factory import make_generator
from bird.llm.prices import Usage, call_cost, price_for

from .conftest import llm_cfg
from .fake_provider import ProviderServer
from .test_search_e2e import PROGRAM

MODEL = {"anthropic": "claude-sonnet-5-5", "openai": "gpt-6.1-sol"}


def _requests(n: int = 3) -> list[Request]:
    return [Request(purpose="reward", sample_index=i, temperature=0.5,
                    messages=(Message("system", "You write reward functions."), Message("user", f"task, sample {i}")))
            for i in range(n)]


def _gen(wire, srv, tmp_path, **kw):
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    base = dict(model=MODEL[wire], mode="batch", batch_poll_s=0.001, cache="readwrite")
    cfg = llm_cfg(wire, srv, tmp_path, **{**base, **kw})
    return make_generator(cfg, BudgetConfig(), run / "llm_calls.jsonl")


def _batches(tmp_path):
    return [json.loads(x) for x in (tmp_path / "run" / "llm_batches.jsonl").read_text().splitlines()]


def test_a_wave_goes_out_as_one_batch_at_the_batch_price_and_lands_in_the_cache_and_journal(wire, tmp_path):
    pytest.importorskip(wire)
    with ProviderServer(wire, lambda body: f"answer to {json.dumps(body)[-40:]}", polls=2) as srv:
        out = _gen(wire, srv, tmp_path).complete_many(_requests())
        stopped = srv  # the address stays part of the answers' keys
        assert srv.batches_created == 1 and srv.batch_polls >= 3 and len(srv.requests) == 3  # in progress twice
    assert [r.text.startswith("answer to") for r in out] == [True] * 3
    price = price_for(wire, MODEL[wire])
    for r in out:
        usage = Usage(r.input_tokens, r.output_tokens, r.cached_input_tokens, r.cache_write_tokens)
        assert r.cost_usd == pytest.approx(call_cost(usage, price) / 2) and r.cost_usd > 0  # batch: 50%
    journal = [json.loads(x) for x in (tmp_path / "run" / "llm_calls.jsonl").read_text().splitlines()]
    assert [j["sample_index"] for j in journal] == [0, 1, 2] and all(j["error"] is None for j in journal)
    submitted, done = _batches(tmp_path)
    assert submitted["batch_id"] == done["batch_id"] and submitted["n"] == 3 and done["done"]
    # the answers are in the response cache: a replay reads them with no server and no batch
    replay = _gen(wire, stopped, tmp_path, cache="replay", mode="sync").complete_many(_requests())
    assert [r.text for r in replay] == [r.text for r in out] and all(r.cached for r in replay)


def test_a_process_killed_while_its_batch_runs_resumes_the_same_batch(wire, tmp_path, monkeypatch):
    pytest.importorskip(wire)

    def killed(seconds: float) -> None:
        raise KeyboardInterrupt("killed while polling")

    with ProviderServer(wire, "the answer", polls=10**6) as srv:
        monkeypatch.setattr(batch_module, "_sleep", killed)
        with pytest.raises(KeyboardInterrupt):
            _gen(wire, srv, tmp_path).complete_many(_requests())
        [submitted] = _batches(tmp_path)
        assert srv.batches_created == 1 and "done" not in submitted
        monkeypatch.undo()
        srv.polls = 0  # the batch ends; a new process (a new generator on the same run directory) resumes
        out = _gen(wire, srv, tmp_path).complete_many(_requests())
        assert srv.batches_created == 1  # no second batch was submitted (nor paid for)
    assert [r.text for r in out] == ["the answer"] * 3
    assert _batches(tmp_path)[-1] == {**_batches(tmp_path)[-1], "batch_id": submitted["batch_id"], "done": True}


@pytest.mark.slow
def test_a_smoke_search_in_batch_mode_replays_identically_without_a_server(tmp_path, monkeypatch):
    pytest.importorskip("anthropic")
    from .test_search_e2e import _RESULT_EXEC, _candidates, _search

    with ProviderServer("anthropic", PROGRAM.format(w=0.001, a=0.5)) as srv:
        common = ["llm=anthropic", f"llm.base_url={srv.base_url}", f"llm.model={MODEL['anthropic']}",
                  f"llm.cache_dir={tmp_path / 'cache'}"]
        recorded = _search(tmp_path / "record", [*common, "llm.mode=batch", "llm.batch_poll_s=0.01"])
        assert srv.batches_created == 2  # one per iteration
    assert recorded["status"] == "completed" and recorded["llm_calls"] == 4
    assert len(_batches_of(tmp_path / "record")) == 4  # two batches, each submitted then read back
    replayed = _search(tmp_path / "replay", [*common, "llm.cache=replay"])
    strip = lambda r: {k: v for k, v in r.items() if k not in _RESULT_EXEC}  # noqa: E731
    assert strip(replayed) == strip(recorded)
    assert _candidates(tmp_path / "replay") == _candidates(tmp_path / "record")


def _batches_of(run):
    return (run / "llm_batches.jsonl").read_text().splitlines()
