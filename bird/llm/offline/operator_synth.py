"""The offline synthesiser's answers to operator, critic and self-verification requests, each read off the request's
context alone: the parents' programs and the feedback statistics shown (crossover, tree actions), the observation
index and task text (critics), the feedback shown for a reward (self-verification)."""

from __future__ import annotations

import random
from typing import Any

from bird.llm.offline.mutation import mutate, optional_terms
from bird.llm.offline.proposals import parent_terms, propose
from bird.llm.offline.terms import Term, render_program
from bird.llm.offline.thought_synth import design_thought

__all__ = ["answer_operator"]


def _crossover(ctx: dict[str, Any], rng: random.Random) -> tuple[list[Term], str] | None:
    """Parent A's terms plus one of B's terms A lacks (B's weight); B's best-known term when A has them all."""
    specs = [parent_terms(p.get("code")) for p in ctx.get("parents", [])]
    if len(specs) < 2 or not specs[0] or not specs[1]:
        return None
    a, b = specs[0], specs[1]
    have = {t.name for t in a}
    fresh = [t for t in b if t.name not in have]
    if fresh:
        return [*a, rng.choice(fresh)], "crossed: parent A's terms plus one of parent B's"
    donors = {t.name: t for t in b}  # every name of B is one of A's here; A may have more
    i = rng.choice([k for k, t in enumerate(a) if t.name in donors])
    donor = donors[a[i].name]
    return [*a[:i], donor, *a[i + 1:]], f"crossed: parent A with parent B's {donor.name}"


def _structure(ctx: dict[str, Any], parent: list[Term], rng: random.Random) -> list[Term]:
    """Add an optional term or drop one (a change of mechanism)."""
    extra = optional_terms(ctx, parent)
    if extra and (rng.random() < 0.6 or len(parent) < 2):
        return [*parent, rng.choice(extra)]
    out = list(parent)
    out.pop(rng.randrange(len(out)))
    return out


def _best_on_path(ctx: dict[str, Any]) -> dict[str, Any] | None:
    """The path node whose shown task score peaked highest (the parent when no score is shown)."""
    path = ctx.get("path") or []

    def peak(node: dict[str, Any]) -> float:
        scores = [s for s in ((node.get("feedback") or {}).get("task_score") or []) if s == s]
        return max(scores) if scores else float("-inf")

    return max(reversed(path), key=peak) if path else None


def _action(ctx: dict[str, Any], rng: random.Random) -> tuple[list[Term], str] | None:
    op = ctx.get("operator")
    parent = parent_terms(ctx.get("parent_code"))
    if op in ("crossover", "crossover_elite"):
        return _crossover(ctx, rng)
    if op == "different_thought" or parent is None:
        return propose(ctx, rng), "proposed afresh from the observation index and task text"
    if op == "mutation_mechanism":
        return _structure(ctx, parent, rng), "restructured the parent (a term added or removed)"
    if op == "mutation_param":
        quiet = {**ctx, "feedback": {k: v for k, v in (ctx.get("feedback") or {}).items() if k != "task_score"}}
        return mutate(quiet, parent, rng), "retuned the parent's weights and temperatures from its feedback"
    if op == "path_reasoning":
        best = _best_on_path(ctx)
        base = parent_terms(best.get("code")) if best else None
        view = {**ctx, "feedback": best.get("feedback") or {}} if best else ctx
        return mutate(view, base or parent, rng), "mutated the path's best-scoring node"
    return None


def _rating(ctx: dict[str, Any]) -> float:
    """Trend of the shown task score over training (last − first, relative), in [-1, 1]; 0 when none is shown."""
    scores = [s for s in ((ctx.get("feedback") or {}).get("task_score") or []) if s == s]
    if len(scores) < 2:
        return 0.0
    first, last = scores[0], scores[-1]
    return max(-1.0, min(1.0, (last - first) / (abs(first) + abs(last) + 1e-9)))


def answer_operator(purpose: str, ctx: dict[str, Any], rng: random.Random, label: str) -> str | None:
    """The answer to a self_verify, critic, crossover or tree-action request; None for any other request."""
    if purpose == "self_verify":
        return f"{label}: rated from the trend of the task score shown.\nRating: {_rating(ctx):.3f}\n"
    if purpose == "critic" and "obs_fields" in ctx:
        code = render_program(propose(ctx, rng), f"{label}: critic proposed from the observation index and task text")
        return f"Offline synthesiser (critic).\n\n```python\n{code}```\n"
    if "obs_fields" not in ctx or ctx.get("operator") in (None, "mutation"):
        return None
    made = _action(ctx, rng)
    if made is None:
        return None
    terms, how = made
    code = render_program(terms, f"{label}: {how}")
    text = f"Offline synthesiser ({how}).\n\n```python\n{code}```\n"
    if ctx.get("design_thought"):  # the prompt asked for a design thought in braces before the code
        text = "{" + design_thought(terms) + "}\n" + text
    return text
