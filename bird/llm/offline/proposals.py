"""The offline synthesiser's proposals: term sets built on the observation fields' declared kinds (velocities, angles
and their cosines, angular velocities, position differences, positions and goals) for the objectives a few generic
words of the task text name, and the term spec an offline program carries (shared by the reward, operator and judge
answers)."""

from __future__ import annotations

import json
import random
import re
from typing import Any

from bird.llm.offline.mutation import optional_terms
from bird.llm.offline.terms import SPEC_MARKER, Term

__all__ = ["propose", "parent_terms", "pick_field", "position_pairs", "task_mentions"]

_WEIGHTS = (0.1, 0.3, 1.0, 3.0)
_TEMPS = (0.05, 0.1, 0.3, 1.0)
_WORDS = {
    "progress": ("forward", "run", "hop", "swim", "fast", "move", "walk"),
    "balance": ("balance", "upright", "falling", "fall", "keep the pole"),
    "reach": ("target", "reach", "goal", "push", "place", "open", "close", "press", "insert", "pick", "tip"),
}


def task_mentions(task: str, group: str) -> bool:
    low = task.lower()
    return any(w in low for w in _WORDS[group])


def pick_field(fields: list[dict], kind: str, axis: str | None = None) -> dict | None:
    for f in fields:
        if f["kind"] == kind and not f.get("always_zero") and (axis is None or f.get("axis") == axis):
            return f
    return None


_HAND_WORDS = {"hand", "gripper", "tcp", "ee", "finger", "fingertip", "effector", "eef"}


def _tokens(name: str) -> set[str]:
    """Lower-case words of a field name ("drawer_handle_pos" -> {"drawer", "handle", "pos"})."""
    return set(re.split(r"[^a-z0-9]+", name.lower()))


def position_pairs(fields: list[dict]) -> list[tuple[str, str]]:
    """(hand, object) and (object, goal) pairs among multi-d position/goal fields, by their names."""
    pos = [f for f in fields if f["kind"] in ("position", "goal") and f["size"] >= 2 and not f.get("always_zero")]
    pos = [f for f in pos if not _tokens(f["name"]) & {"prev", "previous", "last"}]
    hand = [f["name"] for f in pos if _tokens(f["name"]) & _HAND_WORDS]
    goal = [f["name"] for f in pos if f["kind"] == "goal" or _tokens(f["name"]) & {"goal", "target"}]
    objs = [f["name"] for f in pos if f["name"] not in hand and f["name"] not in goal]
    pairs = []
    if hand and objs:
        pairs.append((hand[0], objs[0]))
    if objs and goal:
        pairs.append((objs[0], goal[0]))
    if hand and goal and not objs:
        pairs.append((hand[0], goal[0]))
    return pairs


def _upright(fields: list[dict], rng: random.Random, cosine: bool) -> list[Term]:
    """Uprightness from the orientation fields the task declares: an angle (its square made small), else, where
    `cosine`, the cosine of one (made 1, with the angular velocities small: a pendulum held still at the top)."""
    angle = pick_field(fields, "angle")
    if angle:
        return [Term("upright", "upright", (angle["name"],), rng.choice(_WEIGHTS), rng.choice(("linear", "exp")),
                     rng.choice(_TEMPS))]
    cos = pick_field(fields, "angle_cos")
    if cos is None or not cosine:
        return []
    out = [Term("upright", "upright_cos", (cos["name"],), rng.choice(_WEIGHTS), rng.choice(("linear", "exp")),
                rng.choice(_TEMPS))]
    angvel = [f["name"] for f in fields if f["kind"] == "angular_velocity" and f.get("size", 1) == 1][:2]
    return out + ([Term("smoothness", "smooth", tuple(angvel), rng.choice((0.01, 0.1)))] if angvel else [])


def _required_terms(ctx: dict[str, Any], rng: random.Random) -> list[Term]:
    """The terms the task's objective asks for (moving, balancing, reaching: its words), each built on the fields of
    the kind it needs (velocity along x, an angle or its cosine, a position difference or positions)."""
    fields, task = ctx["obs_fields"], ctx["task"]
    terms: list[Term] = []
    vel = pick_field(fields, "velocity", "x")
    if vel and task_mentions(task, "progress"):
        terms.append(Term("forward_progress", "progress", (vel["name"],), rng.choice((1.0, 1.0, 3.0))))
    if task_mentions(task, "balance") or task_mentions(task, "progress"):
        terms += _upright(fields, rng, cosine=task_mentions(task, "balance"))
    if task_mentions(task, "balance") or "without falling" in task.lower():
        terms.append(Term("alive", "alive", (), rng.choice((0.1, 0.5, 1.0))))
    delta = pick_field(fields, "position_delta")
    if delta and task_mentions(task, "reach"):
        terms.append(Term("target_distance", "distance", (delta["name"],), rng.choice((1.0, 3.0)),
                          rng.choice(("linear", "exp")), rng.choice(_TEMPS)))
    for a, b in position_pairs(fields) if task_mentions(task, "reach") else []:
        terms.append(Term(f"{a}_to_{b}", "pair_distance", (a, b), rng.choice((1.0, 3.0)),
                          rng.choice(("linear", "exp")), rng.choice(_TEMPS)))
    if not terms:  # no objective word: the fields decide (progress along x, else uprightness, else staying alive)
        terms += [Term("forward_progress", "progress", (vel["name"],))] if vel else _upright(fields, rng, cosine=True) or [
            Term("alive", "alive")]
    return terms


def propose(ctx: dict[str, Any], rng: random.Random) -> list[Term]:
    """A fresh program: the task-implied terms plus a seeded subset of optional ones."""
    terms = _required_terms(ctx, rng)
    for opt in optional_terms(ctx, terms):
        if rng.random() < 0.5:
            terms.append(opt.scaled(rng.choice((0.3, 1.0, 3.0))))
    return terms


def parent_terms(code: str | None) -> list[Term] | None:
    """The term spec an offline program carries in its marker comment (None for any other program)."""
    if not code:
        return None
    for line in code.splitlines():
        if line.startswith(SPEC_MARKER):
            try:
                return [Term.from_json(d) for d in json.loads(line[len(SPEC_MARKER):])]
            except (ValueError, KeyError, TypeError):
                return None
    return None
