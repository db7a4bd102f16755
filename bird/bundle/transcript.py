"""A run's LLM transcript: every call its journal (llm_calls.jsonl) lists, with the request and answer the response
cache holds under the call's key; and how a new request differs from the recorded ones."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bird.bundle.archive import BundleError, sha256
from bird.files import loads_lines, read_text
from bird.llm.base import Request, record_key
from bird.llm.cache import ResponseCache, is_key

__all__ = ["Transcript", "collect_transcript", "entry_key", "key_problem", "answer_ok", "request_json", "first_difference",
           "closest_difference"]


@dataclass
class Transcript:
    """The calls of one run in journal order. `lines`: the transcript lines; `missing`: keyed calls whose answer the
    cache does not hold; `unkeyed`: calls of a cacheable backend journalled without a key (runs before bird.bundle)."""

    lines: list[dict[str, Any]] = field(default_factory=list)
    missing: list[dict[str, Any]] = field(default_factory=list)
    unkeyed: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)  # calls that failed when recorded: nothing to replay
    deterministic_calls: int = 0  # calls of a generator that is not cached (the offline synthesiser)


def _answer_hash(response: dict[str, Any]) -> str:
    return sha256(json.dumps(response, sort_keys=True).encode())


_ENTRY_FIELDS = ("provider", "model", "request", "response")


def _journal(run: Path) -> list[dict[str, Any]]:
    """The calls `run/llm_calls.jsonl` lists (none when there is no journal)."""
    journal = run / "llm_calls.jsonl"
    if not journal.exists() and not journal.is_symlink():
        return []
    try:
        calls = loads_lines(read_text(journal, "journal", run))
    except (OSError, ValueError) as exc:
        raise BundleError(f"{journal}: not a readable journal ({str(exc)[:200]})") from None
    if not all(isinstance(c, dict) for c in calls):
        raise BundleError(f"{journal}: a line is not a JSON object")
    return calls


def collect_transcript(run: Path, cache: ResponseCache) -> Transcript:
    """The transcript of the run directory `run`, answers read from `cache`. Raises BundleError when the journal is
    not a regular file within its cap (bird/files.py) or not JSON lines of objects."""
    out = Transcript()
    for seq, call in enumerate(_journal(run)):
        key = call.get("key")
        if not key:
            if call.get("provider") == "offline" or "key" in call:
                out.deterministic_calls += 1  # not cacheable: the journal records key null
            else:
                out.unkeyed += 1
            continue
        if call.get("error"):  # a failed call has no answer; a replay stops where it was made (docs/bundles.md)
            out.failed.append({"seq": seq, "key": key, "purpose": call.get("purpose"),
                               "iteration": call.get("iteration"), "error": call["error"]})
            continue
        entry = cache.get(key)
        if entry is None or not all(k in entry for k in _ENTRY_FIELDS):
            out.missing.append({"seq": seq, "key": key, "purpose": call.get("purpose"),
                                "iteration": call.get("iteration")})
            continue
        out.lines.append({"seq": seq, "key": key, "purpose": call.get("purpose"), "iteration": call.get("iteration"),
                          "sample_index": call.get("sample_index"), "provider": entry["provider"],
                          "model": entry["model"], "request": entry["request"], "response": entry["response"],
                          "response_sha256": _answer_hash(entry["response"])})
    return out


def entry_key(line: dict[str, Any]) -> str:
    """The key a transcript line's request has, recomputed from the line (images from their recorded digests).
    Raises ValueError when the line cannot say (a request with images recorded without their digests, a missing or
    mistyped field)."""
    if not isinstance(line, dict) or not isinstance(line.get("request"), dict):
        raise ValueError("the line holds no request")
    if not isinstance(line.get("provider"), str) or not isinstance(line.get("model"), str):
        raise ValueError("the line names no provider and model")
    return record_key(line["provider"], line["model"], line["request"])


def key_problem(line: dict[str, Any]) -> str | None:
    """Why a transcript line's key may not be used (None when it is its request's key): the key becomes a file name
    in the replay's response cache, so it must be a request key, and the one its request makes."""
    if not is_key(line.get("key")):
        return f"the key {str(line.get('key'))[:80]!r} is not a request key (64 lowercase hex digits)"
    try:
        key = entry_key(line)
    except ValueError as exc:
        return f"the key cannot be recomputed from the request ({exc})"
    return None if key == line["key"] else "the request differs from the one its key was made from"


def answer_ok(line: dict[str, Any]) -> bool:
    return _answer_hash(line["response"]) == line.get("response_sha256")


def _fields(provider: str, model: str, req: dict[str, Any]) -> list[tuple[str, Any]]:
    """A request as (field, value) pairs in the order a reader checks them."""
    out: list[tuple[str, Any]] = [("provider", provider), ("model", model), ("purpose", req["purpose"]),
                                  ("seed", req["seed"]), ("sample_index", req["sample_index"]),
                                  ("temperature", req["temperature"]),
                                  ("reasoning_effort", req.get("reasoning_effort", "none")),
                                  ("max_tokens", req["max_tokens"]),
                                  ("len(messages)", len(req["messages"]))]
    for i, m in enumerate(req["messages"]):
        out += [(f"messages[{i}].role", m["role"]), (f"messages[{i}].content", m["content"]),
                (f"messages[{i}].n_images", m.get("n_images", 0))]
    return out


def request_json(request: Request) -> dict[str, Any]:
    return request.record()


def first_difference(recorded: dict[str, Any], provider: str, model: str, request: Request) -> tuple[int, str]:
    """(how many leading fields agree, a description of the first one that differs) between a recorded transcript
    line and a new request."""
    old = _fields(recorded["provider"], recorded["model"], recorded["request"])
    new = _fields(provider, model, request_json(request))
    for n, ((name, a), (_, b)) in enumerate(zip(old, new, strict=False)):
        if a == b:
            continue
        if isinstance(a, str) and isinstance(b, str) and len(a) > 80:
            at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
            lo = max(0, at - 40)
            return n, (f"{name} at character {at}: recorded {a[lo:at + 60]!r}, replayed {b[lo:at + 60]!r}")
        return n, f"{name}: recorded {a!r}, replayed {b!r}"
    return len(old), "no field differs (the key does: the request carries images whose bytes differ)"


def closest_difference(lines: list[dict[str, Any]], provider: str, model: str, request: Request,
                       iteration: Any) -> str:
    """How a request that the transcript lacks differs from the recorded request it most resembles (same purpose,
    sample index and iteration first), naming that request and the first differing field."""
    if not lines:
        return "the transcript records no request at all"

    def rank(line: dict[str, Any]) -> tuple:
        agree, _ = first_difference(line, provider, model, request)
        return (line["purpose"] == request.purpose, line["request"]["sample_index"] == request.sample_index,
                line.get("iteration") == iteration, agree, -line["seq"])

    best = max(lines, key=rank)
    _, what = first_difference(best, provider, model, request)
    return (f"request purpose={request.purpose} iteration={iteration} sample_index={request.sample_index} is not "
            f"in the transcript; closest recorded request: call #{best['seq']} (key {best['key'][:16]}..., "
            f"purpose={best['purpose']}, iteration={best.get('iteration')}); first differing field: {what}")
