"""The observation a program reads: a dict of named fields whose missing key names the task's fields, nearest
first (worker side; imports only the standard library)."""

from __future__ import annotations

import difflib
from typing import Any

__all__ = ["Fields", "MissingFieldError", "missing_field_message"]

_MAX_CHARS = 360


class MissingFieldError(KeyError):
    """A program read a field the task does not have. A KeyError, so a program's `except KeyError` still works."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def missing_field_message(key: Any, names: list[str]) -> str:
    """`'tcp_center' is not a field ...; this task's fields, nearest first: tcp_pos, obj_pos, ...` (bounded)."""
    ranked = sorted(names, key=lambda n: -difflib.SequenceMatcher(None, str(key).lower(), n.lower()).ratio())
    shown: list[str] = []
    for name in ranked:
        if sum(len(s) + 2 for s in shown) + len(name) > _MAX_CHARS:
            break
        shown.append(name)
    more = f", ... ({len(ranked) - len(shown)} more)" if len(shown) < len(ranked) else ""
    return (f"{key!r} is not a field of obs/next_obs; this task's fields, nearest first: {', '.join(shown)}{more}")


class Fields(dict):
    """field name -> column. Reading a missing name raises MissingFieldError with the task's fields."""

    def __missing__(self, key: Any) -> Any:
        raise MissingFieldError(missing_field_message(key, list(self)))
