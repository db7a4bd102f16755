"""What an answer holds, read from either wire format: its text parts joined, its thinking (Anthropic `thinking`
blocks, `reasoning_content`/`reasoning` fields, thinking parts) set aside, a refusal's text, tool calls, and a note for
each part that is none of these (docs/llm.md, "What bird does with an answer")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Content", "read_parts", "from_openai_message"]

_TEXT = frozenset({"text", "output_text"})
_THINKING = frozenset({"thinking", "reasoning", "reasoning_content", "reasoning_text", "summary_text"})
_REDACTED = frozenset({"redacted_thinking", "redacted_reasoning"})
_TOOL = frozenset({"tool_use", "tool_call", "function_call"})
_TEXT_KEYS = ("text", "thinking", "reasoning", "content", "summary", "value", "refusal")


@dataclass(frozen=True)
class Content:
    """An answer's parts by kind; `set_aside` names each part that was not read (its position and type)."""

    text: str = ""
    thinking: str = ""
    refusal: str = ""
    tool_calls: tuple[dict[str, Any], ...] = ()
    set_aside: tuple[str, ...] = ()


def _plain(value: Any) -> Any:
    """An SDK object as plain dicts and lists (unknown fields kept); plain values as they are."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        try:
            return dump(warnings=False)
        except TypeError:  # an older pydantic without `warnings`
            return dump()
    return value


def _text_of(value: Any, depth: int = 0) -> str:
    """The text a part holds: a string, a part's text field, or the texts of a list of parts (Mistral's thinking)."""
    value = _plain(value)
    if isinstance(value, str) or depth > 4:
        return value if isinstance(value, str) else ""
    if isinstance(value, list):
        return "".join(_text_of(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return next((t for k in _TEXT_KEYS if (t := _text_of(value.get(k), depth + 1))), "")
    return ""


def _join(texts: list[str]) -> str:
    """Parts joined, each starting on its own line (a fence that opens a part stays at the start of a line)."""
    out = ""
    for text in (t for t in texts if t):
        out += ("" if not out or out.endswith("\n") else "\n") + text
    return out


def _tool_call(part: dict[str, Any]) -> dict[str, Any]:
    fn = _plain(part.get("function"))
    fn = fn if isinstance(fn, dict) else part
    args = fn.get("input", fn.get("arguments"))
    return {"name": str(fn.get("name") or ""), "arguments": _plain(args)}


def read_parts(parts: Sequence[Any], where: str = "content part") -> Content:
    """Read a list of parts: OpenAI-compatible list `content`, or Anthropic content blocks."""
    text: list[str] = []
    thinking: list[str] = []
    refusal: list[str] = []
    calls: list[dict[str, Any]] = []
    aside: list[str] = []
    for i, raw in enumerate(parts, 1):
        part = _plain(raw)
        if isinstance(part, str):
            text.append(part)
            continue
        kind = str(part.get("type", "")) if isinstance(part, dict) else type(part).__name__
        if not isinstance(part, dict):
            aside.append(f"{where} {i} ({kind}) set aside: not a part")
        elif kind in _TEXT:
            text.append(_text_of(part.get("text")))
        elif kind in _THINKING:
            thinking.append(_text_of(part.get(kind)) or _text_of(part))
        elif kind in _REDACTED:
            aside.append(f"{where} {i} ({kind}) set aside: thinking the provider does not show")
        elif kind == "refusal":
            refusal.append(_text_of(part))
        elif kind in _TOOL:
            calls.append(_tool_call(part))
        else:
            aside.append(f"{where} {i} of type {kind[:40]!r} set aside: bird reads text, thinking, refusal and "
                         "tool-call parts")
    return Content(_join(text), _join(thinking), _join(refusal), tuple(calls), tuple(aside))


def from_openai_message(message: Any) -> Content:
    """A chat-completions `message`: `content` as a string or a list of parts, `reasoning_content` or `reasoning`
    (compatible servers), `refusal`, `tool_calls` and the legacy `function_call`."""
    msg = _plain(message)
    msg = msg if isinstance(msg, dict) else {}
    body = msg.get("content")
    if isinstance(body, list):
        got = read_parts(body)
    else:
        note = () if body is None or isinstance(body, str) else (f"message content of type {type(body).__name__} "
                                                                 "set aside: not text or a list of parts",)
        got = Content(body if isinstance(body, str) else "", set_aside=note)
    fields = [_text_of(msg.get(k)) for k in ("reasoning_content", "reasoning")]
    calls = [_tool_call(c) for c in (_plain(msg.get("tool_calls")) or []) if isinstance(c, dict)]
    if isinstance(_plain(msg.get("function_call")), dict):
        calls.append(_tool_call(_plain(msg["function_call"])))
    return Content(got.text, _join([*fields, got.thinking]), _join([_text_of(msg.get("refusal")), got.refusal]),
                   (*got.tool_calls, *calls), got.set_aside)
