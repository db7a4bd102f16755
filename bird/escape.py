"""Text recorded by someone else, escaped for the medium a person reads it in (docs/security.md, "Trust boundary"):
a terminal (no control or format characters: no ANSI or OSC escape reaches it), Markdown (no raw HTML, links or
table breaks) and a CSV cell a spreadsheet opens (no formula)."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

__all__ = ["printable", "terminal", "markdown", "csv_cell"]

_MARKDOWN = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\\": "\\\\", "`": "\\`", "[": "\\[",
                           "]": "\\]", "|": "\\|"})
# an escape sequence: OSC (to BEL or ST), CSI (parameters, then a final byte), or a two-character escape
_SEQUENCE = re.compile(r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b\[[0-?]*[ -/]*[@-~]?|\x1b[ -~]?")
_FORMULA = ("=", "+", "-", "@", "\t", "\r")  # what makes a spreadsheet read a cell as a formula (OWASP)


def printable(text: str, newlines: bool = False) -> str:
    """`text` without terminal escape sequences (ANSI/CSI, OSC, ...) and control and format characters (NUL, bidi
    overrides, zero-width characters); tabs, carriage returns and newlines become spaces, newlines are kept when
    `newlines`."""
    out = []
    for ch in _SEQUENCE.sub("", text):
        if ch == "\n" and newlines or unicodedata.category(ch)[0] != "C":
            out.append(ch)
        elif ch in "\t\r\n":
            out.append(" ")
    return "".join(out)


def terminal(value: Any) -> str:
    """Recorded text to print on a terminal, lines kept."""
    return printable(str(value), newlines=True)


def markdown(value: Any) -> str:
    """Recorded text for a Markdown page: one line, HTML's special characters as entities, and the characters of
    links, code spans and table cells backslash-escaped."""
    return printable(str(value)).translate(_MARKDOWN)


def csv_cell(value: Any) -> Any:
    """A CSV cell a spreadsheet shows as text: a string starting with = + - @, a tab or a carriage return gets a
    leading apostrophe; numbers and other strings are returned as they are."""
    return "'" + value if isinstance(value, str) and value.startswith(_FORMULA) else value
