"""Reading structured answers: `parse_json_answer` finds and decodes the JSON object in an LLM's reply (judge
scores, subtask lists, graphs, goal states): fenced blocks are read as bird/llm/blocks.py finds them."""

from __future__ import annotations

import ast
import json
from typing import Any

from bird.llm.blocks import fenced_blocks, outside_blocks
from bird.llm.visible import visible

__all__ = ["AnswerParseError", "parse_json_answer"]

_JSON_TAGS = frozenset({"json", "jsonc", "json5", ""})
_MAX_STARTS = 50  # `{` positions tried in prose before giving up


class AnswerParseError(ValueError):
    """The answer holds no usable JSON object; the message says why and quotes the offending part."""


def parse_json_answer(text: str) -> dict[str, Any]:
    """The JSON object in `text`: the first ```json (or untagged) fenced block holding one, else the first
    brace-balanced {...} of the prose that decodes to one. A Python dict literal (single quotes, True/None) is read
    too, safely (ast.literal_eval).

    Raises AnswerParseError for an empty answer, no object, broken JSON (with line/column; an object never closed is
    named as cut off), or a non-object. Thinking spans are set aside first (bird/llm/visible.py).
    """
    text = visible(text).text
    if not text or not text.strip():
        raise AnswerParseError("empty answer: expected a JSON object")
    blocks = [b.text for b in fenced_blocks(text) if b.tag in _JSON_TAGS]
    errors: list[str] = []
    for raw in blocks:
        value, error = _decode(raw)
        if isinstance(value, dict):
            return value
        errors.append(error or f"expected a JSON object, got {type(value).__name__}")
    prose = outside_blocks(text)  # braces inside code blocks are never the object
    for raw in _objects(prose):
        value, error = _decode(raw)
        if isinstance(value, dict):
            return value
        errors.append(error)
    if not errors:
        raise AnswerParseError(f"no JSON object in answer; it starts {_near(text, 0)!r}")
    raise AnswerParseError(errors[0])


def _decode(raw: str) -> tuple[Any, str]:
    """(value, "") or (None, why)."""
    try:
        return json.loads(raw), ""
    except RecursionError:
        return None, "the JSON is nested too deeply to read"
    except json.JSONDecodeError as exc:
        error = f"broken JSON at line {exc.lineno} column {exc.colno}: {exc.msg}; near {_near(raw, exc.pos)!r}"
        start = raw.find("{")
        if exc.pos >= len(raw.rstrip()) - 1 or (start >= 0 and not _balanced(raw, start).endswith("}")):
            error += " (the object is never closed: the answer looks cut off)"
    try:
        value = ast.literal_eval(raw.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None, error
    return (value, "") if isinstance(value, dict) and all(isinstance(k, str) for k in value) else (None, error)


def _objects(text: str) -> list[str]:
    """Brace-balanced {...} spans of `text` from successive `{` (braces inside strings ignored); an unterminated
    last one is kept so the error says where it broke."""
    out: list[str] = []
    start = text.find("{")
    while start >= 0 and len(out) < _MAX_STARTS:
        span = _balanced(text, start)
        out.append(span)
        if not span.endswith("}"):
            break
        start = text.find("{", start + 1)
    return out


def _balanced(text: str, start: int) -> str:
    depth, quote, escape = 0, "", False
    for i in range(start, len(text)):
        ch = text[i]
        if quote:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == quote:
                quote = ""
        elif ch in "\"'" and depth > 0:
            quote = ch
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return text[start:]  # unterminated: json.loads reports where it broke


def _near(text: str, pos: int, width: int = 40) -> str:
    return text[max(0, pos - width // 2) : pos + width // 2]
