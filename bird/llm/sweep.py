"""Limits shared by every cell of a sweep: one ledger file (calls and dollars sent to providers, against
budget.sweep_max_llm_calls and budget.sweep_max_cost_usd) and per-machine request slots (llm.sweep_max_concurrency),
both in the sweep directory and guarded by flock, so they hold across processes and, on a filesystem every node
mounts, across machines. Only calls that reach a provider count: a cache hit is free. docs/llm.md, "Before a real
sweep"."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import socket
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bird.llm.base import BudgetExhausted, Generator, LLMError, Request, Response, WrappingGenerator

__all__ = ["LEDGER", "SweepBudgetExhausted", "SweepLedger", "SweepLimits", "SweepGate", "open_ledger"]

LEDGER = "llm_ledger.json"
_TOTALS = {"calls": 0, "cost_usd": 0.0, "input_tokens": 0, "output_tokens": 0, "refused": 0}


class SweepBudgetExhausted(BudgetExhausted):
    """budget.sweep_max_llm_calls or budget.sweep_max_cost_usd was reached by the sweep's cells together."""


@contextlib.contextmanager
def _flock(path: Path) -> Iterator[None]:
    with open(path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class SweepLedger:
    """`<sweep dir>/llm_ledger.json`: the sweep's caps and what its cells sent to providers, read and written under
    an exclusive lock on `llm_ledger.lock`."""

    def __init__(self, sweep_dir: Path) -> None:
        self.path = Path(sweep_dir) / LEDGER
        self.lock = self.path.with_suffix(".lock")

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        data = data if isinstance(data, dict) else {}
        return {"max_llm_calls": data.get("max_llm_calls"), "max_cost_usd": data.get("max_cost_usd"),
                **{k: data.get(k, v) for k, v in _TOTALS.items()}}

    def _write(self, data: dict[str, Any]) -> None:
        tmp = self.path.with_name(f".{LEDGER}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
        os.replace(tmp, self.path)

    def set_caps(self, max_llm_calls: int | None, max_cost_usd: float | None) -> dict[str, Any]:
        """Write the caps (keeping what earlier runs of the sweep spent); returns the ledger."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with _flock(self.lock):
            data = {**self._read(), "max_llm_calls": max_llm_calls, "max_cost_usd": max_cost_usd}
            self._write(data)
        return data

    def read(self) -> dict[str, Any]:
        with _flock(self.lock):
            return self._read()

    def admit(self) -> str:
        """Reserve one call; returns "" or why the sweep refuses it."""
        with _flock(self.lock):
            d = self._read()
            reason = ""
            if d["max_cost_usd"] is not None and d["cost_usd"] >= d["max_cost_usd"]:
                reason = f"budget.sweep_max_cost_usd={d['max_cost_usd']} reached (the sweep's cells spent {d['cost_usd']:.4f})"
            elif d["max_llm_calls"] is not None and d["calls"] >= d["max_llm_calls"]:
                reason = f"budget.sweep_max_llm_calls={d['max_llm_calls']} reached across the sweep's cells"
            d["refused" if reason else "calls"] += 1
            self._write(d)
            return reason

    def spent(self, response: Response | None) -> None:
        """Add an answered call's cost and tokens (a failed call keeps its reserved slot and costs nothing)."""
        if response is None:
            return
        with _flock(self.lock):
            d = self._read()
            d["cost_usd"] += response.cost_usd
            d["input_tokens"] += response.input_tokens
            d["output_tokens"] += response.output_tokens
            self._write(d)


class _Slots:
    """`llm.sweep_max_concurrency` request slots per machine: files `<sweep dir>/llm_slots/<host>/<i>`, one flock each.
    A process that dies releases its slots with its file descriptors."""

    def __init__(self, sweep_dir: Path, n: int) -> None:
        self.folder = Path(sweep_dir) / "llm_slots" / socket.gethostname()
        self.folder.mkdir(parents=True, exist_ok=True)
        self.n = n

    @contextlib.contextmanager
    def one(self) -> Iterator[None]:
        rng = random.Random()
        while True:
            for i in rng.sample(range(self.n), self.n):
                fh = open(self.folder / str(i), "a+")  # noqa: SIM115 (held until the call ends)
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    fh.close()
                    continue
                try:
                    yield
                finally:
                    fcntl.flock(fh, fcntl.LOCK_UN)
                    fh.close()
                return
            time.sleep(rng.uniform(0.02, 0.1))


@dataclass(frozen=True)
class SweepLimits:
    """What a cell of a sweep shares with the others: the ledger (None: no sweep cap) and the slots (None: no limit)."""

    ledger: SweepLedger | None
    slots: _Slots | None


def open_ledger(sweep_dir: Path, capped: bool, max_concurrency: int | None) -> SweepLimits:
    """The limits of a cell of the sweep in `sweep_dir`. Raises FileNotFoundError when the sweep is capped and its
    ledger is missing (the launcher did not share the sweep directory with this cell)."""
    ledger = SweepLedger(sweep_dir) if capped else None
    if ledger is not None and not ledger.path.is_file():
        raise FileNotFoundError(f"{ledger.path} is missing: this cell does not see the sweep directory its launcher "
                                "wrote, so the sweep's caps cannot be shared (docs/llm.md, \"Before a real sweep\")")
    return SweepLimits(ledger, _Slots(sweep_dir, max_concurrency) if max_concurrency else None)


class SweepGate(WrappingGenerator):
    """In front of a backend (behind the response cache): each call is admitted by the sweep's ledger and holds one
    of the machine's slots while it runs; a refused call raises SweepBudgetExhausted."""

    def __init__(self, inner: Generator, limits: SweepLimits) -> None:
        super().__init__(inner)
        self.limits = limits

    def complete(self, request: Request) -> Response:
        ledger = self.limits.ledger
        if ledger is not None and (reason := ledger.admit()):
            raise SweepBudgetExhausted(reason)
        response = None
        try:
            with self.limits.slots.one() if self.limits.slots else contextlib.nullcontext():
                response = self.inner.complete(request)
            return response
        finally:
            if ledger is not None:
                ledger.spent(response)

    def complete_many(self, requests: Sequence[Request]) -> list[Response | LLMError]:
        """A batched inner generator's requests: each admitted by the ledger, the admitted ones sent together holding
        one slot."""
        if not self.batched:
            return super().complete_many(requests)
        ledger = self.limits.ledger
        refused = [ledger.admit() if ledger is not None else "" for _ in requests]
        admitted = [r for r, why in zip(requests, refused, strict=True) if not why]
        with self.limits.slots.one() if self.limits.slots and admitted else contextlib.nullcontext():
            answers = iter(self.inner.complete_many(admitted) if admitted else [])
        out: list[Response | LLMError] = []
        for why in refused:
            out.append(SweepBudgetExhausted(why) if why else next(answers))
            if ledger is not None and isinstance(out[-1], Response):
                ledger.spent(out[-1])
        return out

