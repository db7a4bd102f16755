"""`llm.mode=batch`: the requests of one call to `complete_many` (a wave's independent calls) go out as one provider
batch (OpenAI Batch API, Anthropic Message Batches) at the batch price; bird polls until it ends. The batch id is
appended to `llm_batches.jsonl` in the run directory before the first poll, so a process killed while it waits finds
the same batch again when the search resumes (the same requests make the same set of keys) instead of submitting
and paying for a second one. The answers go through the response cache and the journal as any answer does, so replay
and bundles work unchanged. It changes when answers arrive, never what is asked: no method's protocol changes."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bird.llm.api_base import Answer, ApiBackend
from bird.llm.base import LLMError, Request, Response, WrappingGenerator
from bird.llm.retry import call_with_retry

__all__ = ["BatchGenerator", "BATCHES"]

BATCHES = "llm_batches.jsonl"


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


class BatchGenerator(WrappingGenerator):
    """In front of an HTTP backend that implements `batch_submit(items) -> id`, `batch_ended(id) -> bool` and
    `batch_results(id) -> {custom_id: Answer | LLMError}` (each raising TransientError for a retryable fault).

    :param state: the run directory's llm_batches.jsonl (None: batch ids are not kept).
    :param poll_s: seconds between polls.
    """

    batched = True

    def __init__(self, inner: ApiBackend, state: Path | None, poll_s: float) -> None:
        if not hasattr(inner, "batch_submit"):
            raise ValueError(f"llm.mode=batch: llm={inner.provider} has no batch API; allowed with llm=anthropic, "
                             "llm=openai (api.openai.com; local OpenAI-compatible servers usually have none)")
        super().__init__(inner)
        self.state, self.poll_s = state, poll_s

    def complete(self, request: Request) -> Response:
        [out] = self.complete_many([request])
        if isinstance(out, LLMError):
            raise out
        return out

    def complete_many(self, requests: Sequence[Request]) -> list[Response | LLMError]:
        if not requests:
            return []
        if self.inner._client is None:
            return [LLMError(f"llm={self.provider} was built without a client (llm.cache=replay): no network call")
                    for _ in requests]
        requests = [self.inner.prepare(r) for r in requests]
        keys = [r.key(self.inner.cache_provider(), self.model) for r in requests]
        ids = [f"r{i}_{k[:48]}" for i, k in enumerate(keys)]
        set_key = hashlib.sha256("\n".join(keys).encode()).hexdigest()
        start = time.monotonic()
        try:
            batch_id = self._recorded(set_key) or self._submit(set_key, list(zip(ids, requests, strict=True)))
            while not self._retry(lambda: self.inner.batch_ended(batch_id), f"poll batch {batch_id}"):
                _sleep(self.poll_s)
            results = self._retry(lambda: self.inner.batch_results(batch_id), f"results of batch {batch_id}")
        except LLMError as exc:
            return [LLMError(self.inner.redact(str(exc))) for _ in requests]
        self._append({"set": set_key, "batch_id": batch_id, "done": True, "t": round(time.time(), 3)})
        wall = time.monotonic() - start
        return [self._response(results.get(cid), batch_id, wall) for cid in ids]

    def _response(self, got: Answer | LLMError | None, batch_id: str, wall: float) -> Response | LLMError:
        if got is None:
            return LLMError(f"llm={self.provider}: batch {batch_id} returned no result for this request")
        if isinstance(got, LLMError):
            return LLMError(self.inner.redact(str(got)))
        return self.inner.response(got, attempts=1, latency_s=wall, batch=True)

    def _retry(self, fn: Any, what: str) -> Any:
        return call_with_retry(fn, self.inner.policy, f"llm={self.provider} {what}")[0]

    def _submit(self, set_key: str, items: list[tuple[str, Request]]) -> str:
        batch_id = str(self._retry(lambda: self.inner.batch_submit(items), f"submit a batch of {len(items)}"))
        self._append({"set": set_key, "batch_id": batch_id, "provider": self.provider, "model": self.model,
                      "n": len(items), "t": round(time.time(), 3)})
        return batch_id

    def _recorded(self, set_key: str) -> str | None:
        """The batch already submitted for this set of requests and not yet read back (a killed process's)."""
        if self.state is None or not self.state.is_file():
            return None
        found = None
        for line in self.state.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a line cut by a kill
            if isinstance(rec, dict) and rec.get("set") == set_key and isinstance(rec.get("batch_id"), str):
                found = None if rec.get("done") else rec["batch_id"]
        return found

    def _append(self, record: dict[str, Any]) -> None:
        if self.state is not None:
            with open(self.state, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(record) + "\n")
                fh.flush()
