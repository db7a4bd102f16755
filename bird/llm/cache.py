"""Content-addressed response cache shared by every run of a machine, safe for concurrent writers.

Layout: `<dir>/<key[:2]>/<key>.json`, one file per answer, written atomically and read back as a regular file within
its cap, with bounded parsing (bird/files.py), so a reader sees a whole entry or none, and a shared cache can plant
no link, FIFO or endless file in a search.
Modes: off | readwrite (serve hits, store misses) | record (always call, overwrite) | replay (hits only).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bird.files import atomic_writer, read_json
from bird.llm.base import Generator, LLMError, Request, Response, WrappingGenerator

__all__ = ["CACHE_MODES", "CachingGenerator", "ReplayMissError", "ResponseCache", "default_cache_dir", "is_key"]

CACHE_MODES = ("off", "readwrite", "record", "replay")
_FORMAT = 1
_KEY = re.compile(r"[0-9a-f]{64}")  # Request.key: a SHA-256 hex digest


def is_key(key: object) -> bool:
    """Whether `key` has the form of a request key (64 lowercase hex digits): only such a key becomes a path."""
    return isinstance(key, str) and _KEY.fullmatch(key) is not None


class ReplayMissError(RuntimeError):
    """llm.cache=replay and the answer is not in the cache. Not an LLMError: the search stops instead of
    recording a failure, because a replay that quietly diverges is worse than one that does not run.
    Carries the request as sent (`request`, `key`, `provider`, `model`) so a caller can say how it differs."""

    def __init__(self, message: str, request: Request | None = None, key: str = "", provider: str = "",
                 model: str = "") -> None:
        super().__init__(message)
        self.request, self.key, self.provider, self.model = request, key, provider, model


def default_cache_dir() -> Path:
    """`$BIRD_CACHE_DIR`, else `$XDG_CACHE_HOME/bird/llm`, else `~/.cache/bird/llm`."""
    if os.environ.get("BIRD_CACHE_DIR"):
        return Path(os.environ["BIRD_CACHE_DIR"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "bird" / "llm"


class ResponseCache:
    """A directory of answers addressed by request key."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root).expanduser() if root else default_cache_dir()

    def path(self, key: str) -> Path:
        """Where `key`'s answer lives. Raises ValueError for anything but a request key (a name from a journal or a
        bundle could otherwise leave the cache: "../../x")."""
        if not is_key(key):
            raise ValueError(f"response cache key {str(key)[:80]!r} is not a request key (64 lowercase hex digits)")
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored entry, or None (absent, unreadable, another format, or not a request key)."""
        if not is_key(key):
            return None
        try:
            entry = read_json(self.path(key), "answer", self.root)
        except (OSError, ValueError):  # absent, a link leaving the cache, not a regular file, too large, not JSON
            return None
        return entry if isinstance(entry, dict) and entry.get("format") == _FORMAT else None

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Store atomically; concurrent writers of one key leave one whole entry (last writer wins)."""
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        with atomic_writer(target, durable=True) as fh:
            fh.write(json.dumps({"format": _FORMAT, "key": key, **entry}, indent=1).encode())


class CachingGenerator(WrappingGenerator):
    """Serves cacheable generators' answers from a ResponseCache according to `mode`.

    A hit returns the stored answer with cached=True, cost_usd=0 and the original cost in uncached_cost_usd.
    """

    def __init__(self, inner: Generator, cache: ResponseCache, mode: str = "readwrite") -> None:
        if mode not in CACHE_MODES:
            raise ValueError(f"llm.cache={mode!r}; allowed: {list(CACHE_MODES)}")
        super().__init__(inner)
        self.cache, self.mode = cache, mode

    def complete(self, request: Request) -> Response:
        request = self.inner.prepare(request)
        if self.mode == "off":
            return self.inner.complete(request)
        key = request.key(self.inner.cache_provider(), self.inner.model)
        if self.mode in ("readwrite", "replay"):
            entry = self.cache.get(key)
            if entry is not None:
                return _from_entry(entry)
            if self.mode == "replay":
                raise ReplayMissError(_describe_miss(request, key, self), request, key,
                                      self.inner.cache_provider(), self.inner.model)
        response = self.inner.complete(request)
        self.cache.put(key, _to_entry(request, response, self))
        return response

    def complete_many(self, requests: Sequence[Request]) -> list[Response | LLMError]:
        """Hits from the cache; the misses in one call to a batched inner generator (llm.mode=batch)."""
        if not self.batched:
            return super().complete_many(requests)
        requests = [self.inner.prepare(r) for r in requests]
        keys = [r.key(self.inner.cache_provider(), self.inner.model) for r in requests]
        out: list[Response | LLMError | None] = [None] * len(requests)
        if self.mode in ("readwrite", "replay"):
            for i, key in enumerate(keys):
                entry = self.cache.get(key)
                if entry is not None:
                    out[i] = _from_entry(entry)
                elif self.mode == "replay":
                    raise ReplayMissError(_describe_miss(requests[i], key, self), requests[i], key,
                                          self.inner.cache_provider(), self.inner.model)
        todo = [i for i, r in enumerate(out) if r is None]
        for i, answer in zip(todo, self.inner.complete_many([requests[i] for i in todo]), strict=True):
            if not isinstance(answer, Exception) and self.mode != "off":
                self.cache.put(keys[i], _to_entry(requests[i], answer, self))
            out[i] = answer
        return out  # type: ignore[return-value]

    # describe(): the inner generator's; the mode is in config.yaml, so result.json does not differ between record and
    # replay


def _to_entry(request: Request, response: Response, gen: CachingGenerator) -> dict[str, Any]:
    return {
        "created": time.time(),
        "provider": gen.inner.cache_provider(),
        "model": gen.inner.model,
        "request": request.record(),
        "response": {
            "text": response.text,
            "model": response.model,
            "input_tokens": response.input_tokens,
            "output_tokens": response.output_tokens,
            "cost_usd": response.cost_usd,
            "finish_reason": response.finish_reason,
            # the parts of input_tokens the provider's prompt cache served or stored, when it reported any
            **{k: v for k in ("cached_input_tokens", "cache_write_tokens") if (v := getattr(response, k))},
            # what was set aside beside the text (thinking, a refusal, tool calls, unread parts), when there was any
            **{k: v for k, v in _beside_text(response).items() if v},
        },
    }


def _beside_text(response: Response) -> dict[str, Any]:
    return {"thinking": response.thinking, "refusal": response.refusal, "tool_calls": list(response.tool_calls),
            "set_aside": list(response.set_aside)}


def _from_entry(entry: dict[str, Any]) -> Response:
    r = entry["response"]
    return Response(
        text=r["text"],
        model=r["model"],
        input_tokens=r["input_tokens"],
        output_tokens=r["output_tokens"],
        cost_usd=0.0,
        latency_s=0.0,
        cached=True,
        finish_reason=r.get("finish_reason", ""),
        attempts=0,
        uncached_cost_usd=r["cost_usd"],
        thinking=r.get("thinking", ""),
        refusal=r.get("refusal", ""),
        tool_calls=tuple(r.get("tool_calls", ())),
        set_aside=tuple(r.get("set_aside", ())),
        cached_input_tokens=int(r.get("cached_input_tokens", 0)),
        cache_write_tokens=int(r.get("cache_write_tokens", 0)),
    )


def _describe_miss(request: Request, key: str, gen: CachingGenerator) -> str:
    last_user = next((m.content for m in reversed(request.messages) if m.role == "user"), "")
    head = " ".join(last_user.split())[:120]
    return (
        f"llm.cache=replay: no cached answer for purpose={request.purpose} sample_index={request.sample_index} "
        f"seed={request.seed} provider={gen.inner.cache_provider()} model={gen.inner.model} "
        f"(key {key[:16]}..., cache {gen.cache.root}); prompt starts {head!r}. "
        "Replay needs the same config, seed and cache directory as the recorded run."
    )
