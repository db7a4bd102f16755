"""Provider prompt caching: Anthropic's `cache_control` breakpoints on the stable prefix of a request (the system
prompt, and the first user message, which holds the task and the environment's context), and the cached input
tokens each provider's usage reports. OpenAI caches prefixes on its own; only its report is read. docs/llm.md."""

from __future__ import annotations

from typing import Any

from bird.llm.base import Request

__all__ = ["mark_anthropic", "anthropic_usage", "openai_usage"]

_EPHEMERAL = {"type": "ephemeral"}


def _marked(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content]
    for b in reversed(blocks):
        if b.get("type") == "text":
            b["cache_control"] = _EPHEMERAL
            break
    return blocks


def mark_anthropic(params: dict[str, Any], request: Request) -> dict[str, Any]:
    """`params` (a Messages API request) with a breakpoint after the system prompt and, where later requests share it,
    after the first user message: when a dialogue goes on after it, or in a first proposal (every sample of the
    iteration sends it). A one-shot request's only user message is unique to it, and writing it would cost more."""
    out = dict(params)
    if out.get("system"):
        out["system"] = _marked(out["system"])
    messages = [dict(m) for m in out.get("messages", [])]
    if messages and messages[0].get("role") == "user" and (len(messages) > 1 or request.purpose == "reward"):
        messages[0]["content"] = _marked(messages[0]["content"])
    out["messages"] = messages
    return out


def _n(value: Any) -> int:
    return int(value or 0)


def anthropic_usage(usage: Any) -> tuple[int, int, int, int]:
    """(input, output, cached input, cache write) tokens; Anthropic's `input_tokens` leaves both cache parts out."""
    if usage is None:
        return 0, 0, 0, 0
    read, written = _n(getattr(usage, "cache_read_input_tokens", 0)), _n(getattr(usage, "cache_creation_input_tokens", 0))
    return _n(usage.input_tokens) + read + written, _n(usage.output_tokens), read, written


def openai_usage(usage: Any) -> tuple[int, int, int, int]:
    """(input, output, cached input, cache write) tokens; OpenAI's `prompt_tokens` counts both cache parts."""
    if usage is None:
        return 0, 0, 0, 0
    details = getattr(usage, "prompt_tokens_details", None)
    return (_n(usage.prompt_tokens), _n(usage.completion_tokens), _n(getattr(details, "cached_tokens", 0)),
            _n(getattr(details, "cache_write_tokens", 0)))
