"""bird/llm/sweep.py in one process: the ledger's caps and counts, the request slots, and the gate in front of a
backend (the cross-process count and the sweep end to end: tests/llm/test_sweep_caps.py)."""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

import pytest

from bird.llm.base import Generator, LLMError, Message, Request, Response
from bird.llm.sweep import LEDGER, SweepBudgetExhausted, SweepGate, SweepLedger, SweepLimits, open_ledger

EMPTY = {"max_llm_calls": None, "max_cost_usd": None, "calls": 0, "cost_usd": 0.0, "input_tokens": 0,
         "output_tokens": 0, "refused": 0}


def _request(i: int = 0) -> Request:
    return Request("reward", (Message("user", "write a reward"),), sample_index=i)


class Backend(Generator):
    """A backend that answers each request with a priced response and records what it was asked."""

    provider, label, cacheable = "fake", "the fake", True
    price = 0.25

    def __init__(self, batched: bool = False) -> None:
        super().__init__("m", 3)
        self.batched, self.asked, self.batches = batched, [], []

    def complete(self, request: Request) -> Response:
        self.asked.append(request.sample_index)
        return Response(f"answer {request.sample_index}", "m", 10, 2, cost_usd=0.25)

    def complete_many(self, requests):
        if not self.batched:
            return super().complete_many(requests)
        self.batches.append([r.sample_index for r in requests])
        return [self.complete(r) for r in requests]

    def prepare(self, request: Request) -> Request:
        return Request("prepared", request.messages)

    def cache_provider(self) -> str:
        return "fake@host"

    def describe(self):
        return {"provider": "fake", "model": "m", "described": True}

    def sampling(self, request: Request):
        return {"temperature": 0.7, "reasoning_effort": "low"}


class Failing(Backend):
    def complete(self, request: Request) -> Response:
        raise LLMError("provider down")


# --- the ledger -------------------------------------------------------------------------------------------------
def test_a_missing_unreadable_or_non_object_ledger_reads_as_empty(tmp_path):
    ledger = SweepLedger(tmp_path)
    assert ledger.read() == EMPTY
    (tmp_path / LEDGER).write_text("{not json")
    assert ledger.read() == EMPTY
    (tmp_path / LEDGER).write_text("[1, 2]")
    assert ledger.read() == EMPTY
    (tmp_path / LEDGER).write_text(json.dumps({"calls": 4, "other": 1}))
    assert ledger.read() == {**EMPTY, "calls": 4}


def test_set_caps_makes_the_folder_writes_the_caps_and_keeps_the_counts(tmp_path):
    ledger = SweepLedger(tmp_path / "new" / "sweep")
    assert ledger.set_caps(5, 1.5) == {**EMPTY, "max_llm_calls": 5, "max_cost_usd": 1.5}
    ledger.admit()
    assert ledger.set_caps(None, None) == {**EMPTY, "calls": 1}
    assert json.loads(ledger.path.read_text()) == {**EMPTY, "calls": 1}
    assert ledger.lock.name == "llm_ledger.lock" and not list(ledger.path.parent.glob("*.tmp"))


def test_admit_counts_calls_up_to_the_call_cap_then_refusals(tmp_path):
    ledger = SweepLedger(tmp_path)
    ledger.set_caps(2, None)
    assert [ledger.admit() for _ in range(4)] == ["", "", *["budget.sweep_max_llm_calls=2 reached across the "
                                                             "sweep's cells"] * 2]
    assert (ledger.read()["calls"], ledger.read()["refused"]) == (2, 2)


def test_no_caps_admit_every_call(tmp_path):
    ledger = SweepLedger(tmp_path)
    assert [ledger.admit() for _ in range(3)] == ["", "", ""]
    assert ledger.read()["calls"] == 3


def test_the_cost_cap_refuses_once_spending_reaches_it_and_says_what_was_spent(tmp_path):
    ledger = SweepLedger(tmp_path)
    ledger.set_caps(100, 0.5)
    ledger.spent(Response("x", "m", 7, 3, cost_usd=0.25))
    assert ledger.admit() == ""
    ledger.spent(Response("x", "m", 5, 1, cost_usd=0.25))  # exactly the cap
    assert ledger.admit() == "budget.sweep_max_cost_usd=0.5 reached (the sweep's cells spent 0.5000)"
    assert {k: ledger.read()[k] for k in ("calls", "refused", "cost_usd", "input_tokens", "output_tokens")} == {
        "calls": 1, "refused": 1, "cost_usd": 0.5, "input_tokens": 12, "output_tokens": 4}


def test_the_cost_cap_is_named_when_both_caps_are_reached(tmp_path):
    ledger = SweepLedger(tmp_path)
    ledger.set_caps(1, 0.1)
    ledger.admit()
    ledger.spent(Response("x", "m", cost_usd=0.2))
    assert ledger.admit().startswith("budget.sweep_max_cost_usd=0.1 reached")


def test_a_failed_call_keeps_its_reserved_slot_and_costs_nothing(tmp_path):
    ledger = SweepLedger(tmp_path)
    ledger.admit()
    ledger.spent(None)
    assert ledger.read() == {**EMPTY, "calls": 1}


# --- limits of a cell -------------------------------------------------------------------------------------------
def test_a_capped_cell_without_the_sweeps_ledger_is_refused_naming_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=f"{tmp_path / LEDGER} is missing"):
        open_ledger(tmp_path, capped=True, max_concurrency=None)
    limits = open_ledger(tmp_path, capped=False, max_concurrency=None)
    assert (limits.ledger, limits.slots) == (None, None)
    SweepLedger(tmp_path).set_caps(3, None)
    limits = open_ledger(tmp_path, capped=True, max_concurrency=2)
    assert limits.ledger.path == tmp_path / LEDGER and limits.slots.n == 2


def _locked(path: Path) -> bool:
    with open(path, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
        return False


def test_each_request_holds_its_own_slot_until_it_ends(tmp_path):
    slots = open_ledger(tmp_path, capped=False, max_concurrency=2).slots
    files = [slots.folder / "0", slots.folder / "1"]
    with slots.one():
        assert sum(_locked(f) for f in files) == 1
        with slots.one():
            assert all(_locked(f) for f in files)
        assert sum(_locked(f) for f in files) == 1
    assert not any(_locked(f) for f in files)


# --- the gate -----------------------------------------------------------------------------------------------------
def _gate(tmp_path: Path, inner: Generator, calls: int | None = 2, slots: int | None = None) -> SweepGate:
    SweepLedger(tmp_path).set_caps(calls, None)
    return SweepGate(inner, open_ledger(tmp_path, capped=True, max_concurrency=slots))


def test_the_gate_admits_up_to_the_cap_records_spending_and_then_refuses(tmp_path):
    inner = Backend()
    gate = _gate(tmp_path, inner, slots=1)
    assert gate.complete(_request(0)).text == "answer 0" and gate.complete(_request(1)).text == "answer 1"
    with pytest.raises(SweepBudgetExhausted, match="sweep_max_llm_calls=2"):
        gate.complete(_request(2))
    assert inner.asked == [0, 1]
    d = SweepLedger(tmp_path).read()
    assert (d["calls"], d["refused"], d["cost_usd"], d["input_tokens"], d["output_tokens"]) == (2, 1, 0.5, 20, 4)
    assert not _locked(gate.limits.slots.folder / "0")


def test_a_failed_call_through_the_gate_is_raised_and_costs_nothing(tmp_path):
    gate = _gate(tmp_path, Failing())
    with pytest.raises(LLMError, match="provider down"):
        gate.complete(_request())
    assert (SweepLedger(tmp_path).read()["calls"], SweepLedger(tmp_path).read()["cost_usd"]) == (1, 0.0)


def test_without_a_ledger_the_gate_only_passes_calls_through(tmp_path):
    gate = SweepGate(Backend(), SweepLimits(None, None))
    assert [gate.complete(_request(i)).text for i in range(3)] == ["answer 0", "answer 1", "answer 2"]
    assert not (tmp_path / LEDGER).exists()


def test_the_gate_is_its_backend_to_the_cache_and_the_records(tmp_path):
    inner = Backend()
    gate = SweepGate(inner, SweepLimits(None, None))
    assert (gate.model, gate.max_concurrency, gate.provider, gate.label, gate.cacheable) == ("m", 3, "fake",
                                                                                          "the fake", True)
    assert gate.prepare(_request()).purpose == "prepared" and gate.cache_provider() == "fake@host"
    assert gate.describe() == {"provider": "fake", "model": "m", "described": True}
    assert gate.price == 0.25 and gate.batched is False
    # a call record through the gate carries the backend's sampling (was: "not applicable" under sweep caps)
    assert gate.sampling(_request()) == {"temperature": 0.7, "reasoning_effort": "low"}
    with pytest.raises(AttributeError):
        gate.no_such_attribute  # noqa: B018


def test_a_batched_backend_gets_only_the_admitted_requests_in_one_batch(tmp_path):
    inner = Backend(batched=True)
    gate = _gate(tmp_path, inner, calls=2, slots=1)
    out = gate.complete_many([_request(i) for i in range(3)])
    assert inner.batches == [[0, 1]]
    assert [o.text for o in out[:2]] == ["answer 0", "answer 1"] and isinstance(out[2], SweepBudgetExhausted)
    assert SweepLedger(tmp_path).read()["cost_usd"] == 0.5
    assert gate.complete_many([_request(3)])[0].args == ("budget.sweep_max_llm_calls=2 reached across the sweep's "
                                                        "cells",)
    assert inner.batches == [[0, 1]]  # nothing admitted: no batch sent


def test_a_batched_backend_without_a_ledger_gets_every_request(tmp_path):
    inner = Backend(batched=True)
    out = SweepGate(inner, SweepLimits(None, None)).complete_many([_request(i) for i in range(2)])
    assert inner.batches == [[0, 1]] and [o.text for o in out] == ["answer 0", "answer 1"]


def test_an_unbatched_backend_is_asked_one_request_at_a_time_each_admitted(tmp_path):
    inner = Backend()
    out = _gate(tmp_path, inner, calls=1).complete_many([_request(0), _request(1)])  # answered concurrently
    answered = [i for i, o in enumerate(out) if isinstance(o, Response)]
    assert len(answered) == 1 and inner.asked == answered and out[answered[0]].text == f"answer {answered[0]}"
    assert isinstance(out[1 - answered[0]], SweepBudgetExhausted)


def test_the_missing_ledger_error_says_why_and_where_to_read_more(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        open_ledger(tmp_path, capped=True, max_concurrency=None)
    assert str(err.value) == (f"{tmp_path / LEDGER} is missing: this cell does not see the sweep directory its "
                              "launcher wrote, so the sweep's caps cannot be shared (docs/llm.md, \"Before a real "
                              "sweep\")")


def test_the_ledger_file_is_indented_json(tmp_path):
    data = SweepLedger(tmp_path).set_caps(4, 1.5)
    assert (tmp_path / LEDGER).read_text(encoding="utf-8") == json.dumps(data, indent=1)


def test_the_slots_are_files_in_a_folder_per_machine_that_every_cell_shares(tmp_path):
    import socket

    first = open_ledger(tmp_path, capped=False, max_concurrency=2).slots
    second = open_ledger(tmp_path, capped=False, max_concurrency=2).slots  # the folder exists: shared, not an error
    assert first.folder == second.folder == tmp_path / "llm_slots" / socket.gethostname()


class Holding(Backend):
    """A backend that records, for each call, whether the machine's one request slot was held while it ran."""

    def __init__(self, slot: Path, batched: bool = False) -> None:
        super().__init__(batched)
        self.slot, self.held = slot, []

    def complete(self, request: Request) -> Response:
        self.held.append(_locked(self.slot))
        return super().complete(request)


def test_a_call_through_the_gate_holds_a_slot_while_it_runs(tmp_path):
    gate = _gate(tmp_path, Backend(), calls=3, slots=1)
    inner = gate.inner = Holding(gate.limits.slots.folder / "0")
    gate.complete(_request(0))
    inner.batched = True
    gate.complete_many([_request(1), _request(2)])
    assert inner.held == [True, True, True] and inner.batches == [[1, 2]]


def test_a_gate_being_built_or_copied_has_no_backend_to_ask():
    gate = SweepGate.__new__(SweepGate)  # what copy and pickle make before __dict__ is filled
    with pytest.raises(AttributeError) as err:
        gate.price  # noqa: B018
    assert err.value.args == ("inner",)


def test_every_wrapper_is_its_backend_to_the_records(tmp_path):
    """The batch runner, the sweep's gate and the response cache share one way of standing in for their backend
    (bird/llm/base.py WrappingGenerator): what it sends, how it samples, how it describes itself."""
    from bird.llm.batch import BatchGenerator
    from bird.llm.cache import CachingGenerator, ResponseCache

    inner = Backend()
    inner.batch_submit = lambda items: "batch-1"
    for gen in (BatchGenerator(inner, None, 0.0), SweepGate(inner, SweepLimits(None, None)),
                CachingGenerator(inner, ResponseCache(tmp_path / "cache"))):
        assert gen.sampling(_request()) == {"temperature": 0.7, "reasoning_effort": "low"}, gen
        assert gen.prepare(_request()).purpose == "prepared" and gen.cache_provider() == "fake@host"
        assert gen.describe()["described"] and (gen.provider, gen.label, gen.cacheable) == ("fake", "the fake", True)
