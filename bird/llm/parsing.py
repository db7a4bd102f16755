"""Reading structured answers: `parse_json_answer` finds and decodes the JSON object in an LLM's reply."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["AnswerParseError", "parse_json_answer"]

_FENCE = re.compile(r"```[ \t]*(?:json[c5]?)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


class AnswerParseError(ValueError):
    """The answer holds no usable JSON object; the message says why and quotes the offending part."""


def parse_json_answer(text: str) -> dict[str, Any]:
    """The JSON object in `text`: a ```json fenced block if there is one, else the first balanced {...}.

    Raises AnswerParseError for an empty answer, no object, broken JSON (with line/column), or a non-object.
    """
    if not text or not text.strip():
        raise AnswerParseError("empty answer: expected a JSON object")
    candidates = [m.group(1) for m in _FENCE.finditer(text)] or [_first_object(text)]
    errors: list[str] = []
    for raw in candidates:
        if raw is None:
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            errors.append(f"broken JSON at line {exc.lineno} column {exc.colno}: {exc.msg}; near {_near(raw, exc.pos)!r}")
            continue
        if isinstance(value, dict):
            return value
        errors.append(f"expected a JSON object, got {type(value).__name__}")
    if not errors:
        raise AnswerParseError(f"no JSON object in answer; it starts {_near(text, 0)!r}")
    raise AnswerParseError(errors[0])


def _first_object(text: str) -> str | None:
    """The first brace-balanced {...} span (braces inside strings ignored), or the unterminated tail."""
    start = text.find("{")
    if start < 0:
        return None
    depth, in_str, escape = 0, False, False
    for i in range(start, len(text)):
        ch = text[i]
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return text[start:]  # unterminated: json.loads reports where it broke


def _near(text: str, pos: int, width: int = 40) -> str:
    return text[max(0, pos - width // 2) : pos + width // 2]
