"""Accounting: every call is journalled (purpose, model, latency, tokens, cost, cache hit); budget caps stop generation.

Budget caps count what the answers cost when generated (`uncached_cost_usd`) and every call including cache hits,
so a run stops at the same point whether its answers come from the provider or from the cache (replay).
`cost_usd` is the money actually spent by this run (0 for a cache hit).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bird.files import append_text
from bird.llm.base import BudgetExhausted, Generator, LLMError, Request, Response

__all__ = ["JournalGenerator", "Ledger"]


class Ledger:
    """Totals, caps and journal file shared by every generator of one search (generator and judge)."""

    def __init__(self, path: Path | None, max_calls: int | None = None, max_cost_usd: float | None = None) -> None:
        self.path = path
        self.max_calls = max_calls
        self.max_cost_usd = max_cost_usd
        self.lock = threading.Lock()
        self.sweep: Any = None  # bird.llm.sweep.SweepLimits of a sweep's cell (set by the factory)
        self.run_dir: Path | None = None  # where llm.mode=batch keeps its batch ids (set by the factory)
        self.totals: dict[str, Any] = {
            "calls": 0,
            "cached_calls": 0,
            "failed_calls": 0,
            "refused_calls": 0,  # refused by the sweep's caps (not counted in `calls`)
            "input_tokens": 0,
            "output_tokens": 0,
            "cached_input_tokens": 0,  # parts of input_tokens read from / written to the provider's prompt cache
            "cache_write_tokens": 0,
            "cost_usd": 0.0,
            "uncached_cost_usd": 0.0,
        }

    def admit(self, n: int) -> tuple[int, str]:
        """Reserve up to `n` call slots (call under `lock`). Returns (admitted, reason for the rest)."""
        t = self.totals
        if self.max_cost_usd is not None and t["uncached_cost_usd"] >= self.max_cost_usd:
            return 0, f"budget.max_cost_usd={self.max_cost_usd} reached (answers cost {t['uncached_cost_usd']:.4f})"
        if self.max_calls is not None and t["calls"] + n > self.max_calls:
            k = max(0, self.max_calls - t["calls"])
            t["calls"] += k
            return k, f"budget.max_llm_calls={self.max_calls} reached"
        t["calls"] += n
        return n, ""


class JournalGenerator(Generator):
    """Wraps a generator; appends one JSON line per call to `path` and keeps running totals.

    :param ledger: share another journal's totals and caps (then path/max_calls/max_cost_usd are ignored).
    """

    def __init__(
        self,
        inner: Generator,
        path: Path | None,
        max_calls: int | None = None,
        max_cost_usd: float | None = None,
        ledger: Ledger | None = None,
    ) -> None:
        super().__init__(inner.model, inner.max_concurrency)
        self.inner = inner
        self.provider = inner.provider
        self.label = inner.label
        self.cacheable = inner.cacheable
        self.ledger = ledger or Ledger(path, max_calls, max_cost_usd)
        self.path = self.ledger.path
        self.max_calls = self.ledger.max_calls
        self.max_cost_usd = self.ledger.max_cost_usd

    def share(self, inner: Generator) -> JournalGenerator:
        """A journal over `inner` that shares this one's file, totals and budget (e.g. the judge)."""
        return JournalGenerator(inner, None, ledger=self.ledger)

    def complete(self, request: Request) -> Response:
        with self.ledger.lock:
            admitted, reason = self.ledger.admit(1)
        if not admitted:
            raise BudgetExhausted(reason)
        return self._call(request)

    def complete_many(self, requests: Sequence[Request]) -> list[Response | LLMError]:
        """Admit the batch against the budget once, in order (deterministic), then answer concurrently."""
        with self.ledger.lock:
            admitted, reason = self.ledger.admit(len(requests))

        def one(req: Request) -> Response | LLMError:
            try:
                return self._call(req)
            except LLMError as exc:
                return exc

        head = list(requests[:admitted])
        if head and getattr(self.inner, "batched", False):  # llm.mode=batch: one provider batch for the lot
            out = self._batch(head)
        elif len(head) <= 1 or self.max_concurrency == 1:
            out = [one(r) for r in head]
        else:
            with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(head))) as pool:
                out = list(pool.map(one, head))
        return out + [BudgetExhausted(reason) for _ in requests[admitted:]]

    def _batch(self, requests: list[Request]) -> list[Response | LLMError]:
        """Answer `requests` through the batched inner generator, journalling each as a call."""
        start = time.time()
        out = self.inner.complete_many(requests)
        for request, answer in zip(requests, out, strict=True):
            ok = not isinstance(answer, Exception)
            self._record(request, answer if ok else None, None if ok else f"{type(answer).__name__}: {answer}",
                         start, isinstance(answer, BudgetExhausted))
        return out

    def _call(self, request: Request) -> Response:
        start = time.time()
        error: str | None = None
        response: Response | None = None
        refused = False
        try:
            response = self.inner.complete(request)
            return response
        except BudgetExhausted as exc:  # the sweep's caps (bird.llm.sweep): the call was never made
            error = f"{type(exc).__name__}: {exc}"
            refused = True
            raise
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            self._record(request, response, error, start, refused)

    def _record(self, request: Request, response: Response | None, error: str | None, start: float,
                refused: bool = False) -> None:
        entry: dict[str, Any] = {
            "t": start,
            "purpose": request.purpose,
            "provider": self.provider,
            "model": self.model,
            "sample_index": request.sample_index,
            "iteration": request.context.get("iteration"),
            "key": self.inner.cache_key(request),  # the request's response-cache address (bird.bundle packs by it)
            **self.inner.sampling(request),  # temperature and reasoning effort as answered
            "latency_s": round(time.time() - start, 4),
            "error": error,
        }
        ledger = self.ledger
        with ledger.lock:
            t = ledger.totals
            if refused:
                t["calls"] -= 1
                t["refused_calls"] += 1
                entry["refused"] = True
            elif response is None:
                t["failed_calls"] += 1
                t["last_error"] = error
            else:
                uncached = response.cost_usd if response.uncached_cost_usd is None else response.uncached_cost_usd
                entry.update(
                    input_tokens=response.input_tokens,
                    output_tokens=response.output_tokens,
                    cached_input_tokens=response.cached_input_tokens,
                    cache_write_tokens=response.cache_write_tokens,
                    cost_usd=response.cost_usd,
                    uncached_cost_usd=uncached,
                    cached=response.cached,
                    attempts=response.attempts,
                    finish_reason=response.finish_reason,
                )
                t["cached_calls"] += int(response.cached)
                t["input_tokens"] += response.input_tokens
                t["output_tokens"] += response.output_tokens
                t["cached_input_tokens"] += response.cached_input_tokens
                t["cache_write_tokens"] += response.cache_write_tokens
                t["cost_usd"] += response.cost_usd
                t["uncached_cost_usd"] += uncached
            if ledger.path is not None:
                append_text(ledger.path, json.dumps(entry) + "\n")

    def totals(self) -> dict[str, Any]:
        with self.ledger.lock:
            return dict(self.ledger.totals)

    def sampling(self, request: Request) -> dict[str, Any]:
        return self.inner.sampling(request)

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()
