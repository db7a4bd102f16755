"""The offline synthesiser's design thoughts: the one-sentence thought it puts in braces before its program, and its
answer to a thought-alignment request (a re-description of the program shown). Both read only the request: the term
spec line the offline programs carry, else the component names in the code shown."""

from __future__ import annotations

import json
import re
from typing import Any

from bird.llm.offline.terms import SPEC_MARKER, Term

__all__ = ["design_thought", "answer_alignment"]

_KIND_WORDS = {"progress": "progress of {f}", "alive": "a constant alive bonus", "upright": "uprightness of {f}",
               "upright_cos": "{f} near 1 (upright)",
               "distance": "closeness of {f} to zero", "pair_distance": "closeness of {f}", "bonus": "a bonus when {f} are close",
               "control": "an action-magnitude cost", "smooth": "a penalty on {f}"}


def _describe(t: Term) -> str:
    what = _KIND_WORDS.get(t.kind, t.kind).format(f=" and ".join(t.fields) or "the state")
    shape = f", exp-shaped with temperature {t.temp:g}" if t.form == "exp" else ""
    return f"{t.name} ({what}{shape}, weight {t.weight:g})"


def design_thought(terms: list[Term]) -> str:
    """One sentence: which terms the program sums and with which weights."""
    return "A weighted sum of " + "; ".join(_describe(t) for t in terms) + "."


def _terms_in(code: str) -> list[Term] | None:
    for line in (code or "").splitlines():
        if line.startswith(SPEC_MARKER):
            try:
                return [Term.from_json(d) for d in json.loads(line[len(SPEC_MARKER):])]
            except (ValueError, KeyError, TypeError):
                return None
    return None


def answer_alignment(ctx: dict[str, Any], label: str) -> str:
    """Re-describe the program in the request: its terms when it carries a spec, else its component names."""
    code = ctx.get("code") or ""
    terms = _terms_in(code)
    if terms:
        body = (f"The reward adds {len(terms)} components: " + "; ".join(_describe(t) for t in terms)
                + ". The total is their weighted sum; each component is reported by name.")
    else:
        names = sorted(set(re.findall(r"[\"'](\w+)[\"']\s*:", code)))
        body = ("The reward combines the components " + ", ".join(names) + "." if names
                else "The reward is a single expression with no named components.")
    return f"{body} ({label}; stated idea: {str(ctx.get('thought', ''))[:200]})"
