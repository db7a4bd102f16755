"""The visible part of an answer's text: invisible characters normalised, thinking spans (`<think>`, `<thinking>`,
`<reasoning>`) set aside. Thinking is never code (docs/llm.md, "What bird does with an answer")."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Visible", "visible", "normalise"]

_INVISIBLE = dict.fromkeys(map(ord, "\ufeff\u200b\u200c\u200d\u2060\u180e"), None) | {0xA0: " ", 0x202F: " "}
_OPEN = re.compile(r"<(think|thinking|reasoning)>|\u25c1think\u25b7", re.IGNORECASE)
_CLOSE = re.compile(r"</(think|thinking|reasoning)>|\u25c1/think\u25b7", re.IGNORECASE)


@dataclass(frozen=True)
class Visible:
    """`text`: the answer with each thinking span blanked (its lines kept empty, so line numbers stay the
    answer's); `thinking`: the spans set aside; `notes`: what was done, for the record."""

    text: str
    thinking: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def normalise(text: str) -> str:
    """Line ends as \\n; byte-order marks and zero-width characters dropped; no-break spaces as spaces."""
    return (text or "").replace("\r\n", "\n").replace("\r", "\n").translate(_INVISIBLE)


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def visible(text: str) -> Visible:
    """Set aside the thinking spans of `text`: <think>...</think> (and <thinking>, <reasoning>, Kimi's ◁think▷); a
    closing tag with no opening one ends a span that began with the answer (the chat template opened it); an opening
    tag never closed runs to the end of the answer."""
    text = normalise(text)
    spans: list[tuple[int, int]] = []
    pos = 0
    first_close, first_open = _CLOSE.search(text), _OPEN.search(text)
    if first_close and (first_open is None or first_close.start() < first_open.start()):
        spans.append((0, first_close.end()))
        pos = first_close.end()
    while (start := _OPEN.search(text, pos)) is not None:
        end = _CLOSE.search(text, start.end())
        spans.append((start.start(), end.end() if end else len(text)))
        pos = end.end() if end else len(text)
    if not spans:
        return Visible(text)
    out, kept, notes = [], 0, []
    for a, b in spans:
        out += [text[kept:a], "\n" * text.count("\n", a, b)]
        closed = b < len(text) or bool(_CLOSE.search(text[a:b]))
        notes.append(f"thinking set aside: lines {_line(text, a)}-{_line(text, b)}" + ("" if closed else " (never closed)"))
        kept = b
    out.append(text[kept:])
    return Visible("".join(out), tuple(text[a:b] for a, b in spans), tuple(notes))
