"""The offline synthesiser's mutation rules: Eureka's advice to its LLM (restructure on a near-zero score or
misranked preferences, rescale a component that barely changes or dominates), applied to the parent's terms."""

from __future__ import annotations

import random
from typing import Any

from bird.llm.offline.terms import Term

__all__ = ["mutate", "optional_terms", "NEAR_ZERO_SCORE"]

NEAR_ZERO_SCORE = 0.05  # a best task score at or below this restructures the program


def optional_terms(ctx: dict[str, Any], terms: list[Term]) -> list[Term]:
    """Terms a program may add beyond what the task implies (control cost, smoothness, a near bonus, alive)."""
    opts = [Term("action_cost", "control", (), 0.01)]
    angvel = [f["name"] for f in ctx["obs_fields"] if f["kind"] == "angular_velocity"][:2]
    if angvel:
        opts.append(Term("smoothness", "smooth", tuple(angvel), 0.01))
    dist = next((t for t in terms if t.kind in ("distance", "pair_distance")), None)
    if dist is not None:
        opts.append(Term("near_bonus", "bonus", dist.fields, 1.0, temp=0.05))
    if not any(t.kind == "alive" for t in terms):
        opts.append(Term("alive", "alive", (), 0.1))
    have = {t.name for t in terms}
    return [t for t in opts if t.name not in have]


def _stats(values: list[float]) -> tuple[float, float]:
    vals = [v for v in values if v == v]
    if not vals:
        return 0.0, 0.0
    return sum(vals) / len(vals), max(vals) - min(vals)


def mutate(ctx: dict[str, Any], parent: list[Term], rng: random.Random) -> list[Term]:
    """Eureka's advice, applied mechanically: restructure on a zero score, rescale flat or dominant components."""
    fb = ctx.get("feedback") or {}
    comps: dict[str, list[float]] = fb.get("components", {})
    scores = [s for s in fb.get("task_score", []) if s == s]
    terms = list(parent)
    if (scores and max(scores) <= NEAR_ZERO_SCORE) or "preference" in fb:  # (1) near-zero score or misranked prefs: restructure
        extra = optional_terms(ctx, terms)
        if extra and rng.random() < 0.6:
            terms.append(rng.choice(extra))
        elif len(terms) > 1:
            terms.pop(rng.randrange(len(terms)))
        terms = [t.scaled(rng.choice((0.3, 3.0))) if t.kind in ("progress", "distance", "pair_distance") else t
                 for t in terms]
    means = {n: abs(_stats(v)[0]) for n, v in comps.items()}
    out = []
    for t in terms:
        mean, spread = _stats(comps.get(t.name, []))
        others = sum(m for n, m in means.items() if n != t.name)
        if t.name in comps and t.kind != "alive" and spread <= 0.05 * abs(mean) + 1e-6:  # (2) barely changes
            t = Term(t.name, t.kind, t.fields, t.weight, t.form, round(t.temp * rng.choice((0.25, 4.0)), 4), t.extra) \
                if t.form == "exp" else t.scaled(3.0)
        if t.name in comps and others > 0 and abs(mean) > 5 * others:  # (3) dominates: rescale it
            t = t.scaled(0.25)
        out.append(t)
    if out:  # sample diversity: jitter one weight
        i = rng.randrange(len(out))
        out[i] = out[i].scaled(rng.choice((0.5, 0.8, 1.25, 2.0)))
    return out
