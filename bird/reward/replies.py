"""Host-side reading of what an isolated process sends back (a reward worker, the trainer, an artefact inspector).

Everything here is total: any JSON value of any shape becomes either the validated value or a RewardProgramError
carrying a `bad_output` Failure, never another exception. Texts are bounded and stripped of control characters.
"""

from __future__ import annotations

import math
import re
from typing import Any

from bird.reward.protocol import clean_text
from bird.types import Failure, FailureKind

__all__ = ["RewardProgramError", "MAX_COMPONENTS", "MAX_NAME", "bad", "is_ok", "failure_from", "component_names",
           "name_problem", "debug_texts", "layer_list", "text_list", "number", "integer", "finite_map"]

MAX_NAME = 64  # characters of a component name
MAX_COMPONENTS = 32
_ROW = re.compile(r"[0-9]{1,9}")
_KINDS = {"runtime_error", "bad_output", "non_finite", "timeout"}


class RewardProgramError(RuntimeError):
    """The program failed (raised, timed out, returned bad or non-finite values); carries the Failure record."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(f"{failure.kind}: {failure.reason}")
        self.failure = failure


def bad(what: str) -> RewardProgramError:
    return RewardProgramError(Failure(FailureKind.BAD_OUTPUT, what))


def is_ok(reply: dict[str, Any]) -> bool:
    """True only for `"ok": true` (not 1, "yes" or a list)."""
    return reply.get("ok") is True


def failure_from(reply: dict[str, Any], kinds: frozenset[str] | set[str] = frozenset(_KINDS)) -> Failure:
    """A reply's own failure record: its kind when it is one of `kinds` (else runtime_error), bounded texts."""
    kind = reply.get("kind")
    kind = FailureKind(kind) if isinstance(kind, str) and kind in kinds else FailureKind.RUNTIME_ERROR
    return Failure(kind, clean_text(reply.get("reason", "unknown error"), 500),
                   clean_text(reply.get("detail", ""), 4000, newlines=True))


def name_problem(name: Any) -> str:
    """Why `name` cannot name a component, or "": a name is a Python identifier (letters of any script, digits not
    first, _) of at most MAX_NAME characters."""
    if not isinstance(name, str):
        return f"component name {clean_text(name, 80)!r} is a {type(name).__name__}, not a string"
    shown = clean_text(name, 80)
    if len(name) > MAX_NAME:
        return f"component name {shown!r} has {len(name)} characters; at most {MAX_NAME}"
    if not name.isidentifier():
        if not name:
            return "a component name is empty"
        first = name[0]
        where = (f"it starts with {first!r}" if not ("_" + first).isidentifier() or first.isdigit()
                 else f"it holds {next(c for c in name if not ('_' + c).isidentifier())!r}")
        return f"component name {shown!r} is not a Python identifier ({where}); use letters, digits (not first) and _"
    return ""


def component_names(value: Any) -> tuple[str, ...]:
    """At most MAX_COMPONENTS distinct identifiers of at most MAX_NAME characters (name_problem)."""
    if not isinstance(value, list) or len(value) > MAX_COMPONENTS:
        raise bad(f"at most {MAX_COMPONENTS} components allowed, as a list of names")
    for name in value:
        if problem := name_problem(name):
            raise bad(problem)
    if len(set(value)) != len(value):
        raise bad("duplicate component names")
    return tuple(value)


def debug_texts(value: Any, rows: list[int]) -> dict[int, str]:
    """{row: text} for the rows asked only; keys are decimal strings (ASCII digits), texts bounded."""
    if not isinstance(value, dict):
        return {}
    out = {}
    for key, text in list(value.items())[: len(rows) + 64]:
        if isinstance(key, str) and _ROW.fullmatch(key) and int(key) in rows:
            out[int(key)] = clean_text(text, 600)
    return out


def layer_list(value: Any, names: tuple[str, ...]) -> list[dict[str, Any]]:
    """The isolation layers a process reports: one {name, active, detail} per expected name (missing = inactive)."""
    got: dict[str, dict[str, Any]] = {}
    for d in value[:64] if isinstance(value, list) else []:
        if isinstance(d, dict) and isinstance(d.get("name"), str) and d["name"] in names:
            got.setdefault(d["name"], {"name": d["name"], "active": d.get("active") is True,
                                       "detail": clean_text(d.get("detail"), 800)})
    return [got.get(n, {"name": n, "active": False, "detail": "not reported"}) for n in names]


def text_list(value: Any, most: int, limit: int, what: str) -> list[str]:
    if not isinstance(value, list) or len(value) > most:
        raise bad(f"{what} must be a list of at most {most} strings")
    return [clean_text(p, limit) for p in value]


def number(value: Any, what: str, lo: float = -math.inf, hi: float = math.inf, nan: bool = False) -> float:
    """A finite JSON number (not a bool) within [lo, hi]; NaN only when `nan`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise bad(f"{what} must be a number, got {clean_text(value, 40)}")
    x = float(value)
    if math.isnan(x):
        if nan:
            return x
        raise bad(f"{what} is NaN")
    if not math.isfinite(x) or not lo <= x <= hi:
        raise bad(f"{what}={x!r} is not finite or outside [{lo:g}, {hi:g}]")
    return x


def integer(value: Any, what: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise bad(f"{what} must be an integer in [{lo}, {hi}], got {clean_text(value, 40)}")
    return int(value)


def finite_map(value: Any, most: int, what: str) -> dict[str, float]:
    """{text: finite number} with at most `most` entries (e.g. REWARD_WEIGHTS)."""
    if not isinstance(value, dict) or len(value) > most:
        raise bad(f"{what} must map at most {most} names to finite numbers")
    return {clean_text(k, 100): number(v, what) for k, v in value.items()}
