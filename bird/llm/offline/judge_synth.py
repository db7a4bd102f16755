"""The offline synthesiser's answers to subtask lists, their revisions, judge scores and feedback summaries. Each
reads only its request's context, i.e. what the prompt shows: the observation index and task text (subtask lists);
the subtask list and the feedback shown (revisions); the subtasks' `done_when` conditions and the rollout's state rows
(judge scores: no images are viewed, nothing else is read); the feedback statistics shown (summaries).

`done_when` conditions it writes, and the only ones it can check, have three forms: `norm(A - B) < t` (two position
fields come together), `mean(F) > t` (a velocity field's mean over the rollout) and `abs(F) < t` (an angle kept
small). A condition it cannot read gets the middle score, saying so."""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from bird.llm.offline.proposals import pick_field, position_pairs, task_mentions

__all__ = ["answer_subtasks", "answer_revision", "answer_judge_score", "answer_summary"]

REACHED = 0.06  # m: "together" for a pair of positions (a fixed heuristic, not any task's success threshold)
SPEED = 1.0  # m/s: "moving forward" for a velocity field
UPRIGHT = 0.2  # rad: "upright" for an angle field
_NORM = re.compile(r"norm\(\s*(\w+)\s*-\s*(\w+)\s*\)\s*<\s*([\d.]+)")
_MEAN = re.compile(r"mean\(\s*(\w+)\s*\)\s*>\s*([\d.]+)")
_ABS = re.compile(r"abs\(\s*(\w+)\s*\)\s*<\s*([\d.]+)")


def _subtasks(ctx: dict[str, Any]) -> list[dict[str, str]]:
    fields, task = ctx["obs_fields"], ctx["task"]
    out = []
    for a, b in position_pairs(fields) if task_mentions(task, "reach") else []:
        out.append({"name": f"bring {a} to {b}", "description": f"Move so that {a} reaches {b}.",
                    "done_when": f"norm({a} - {b}) < {REACHED}"})
    vel = pick_field(fields, "velocity", "x")
    if vel and task_mentions(task, "progress"):
        out.append({"name": "move forward", "description": f"Move in +x: keep {vel['name']} high.",
                    "done_when": f"mean({vel['name']}) > {SPEED}"})
    angle = pick_field(fields, "angle")
    if angle and (task_mentions(task, "balance") or task_mentions(task, "progress")):
        out.append({"name": "stay upright", "description": f"Keep {angle['name']} near zero without falling.",
                    "done_when": f"abs({angle['name']}) < {UPRIGHT}"})
    return out or [{"name": "achieve the task", "description": task}]


def answer_subtasks(ctx: dict[str, Any], label: str) -> str:
    """An ordered list from the position pairs, x-velocity and angle fields the task words point to."""
    items = _subtasks(ctx)
    if ctx.get("n_subtasks"):
        items = (items * ctx["n_subtasks"])[: ctx["n_subtasks"]] if len(items) < ctx["n_subtasks"] else items[: ctx["n_subtasks"]]
        items = [{**s, "name": f"{s['name']} ({i + 1})"} for i, s in enumerate(items)]
    return f"{label}: subtasks from the observation index.\n```json\n{json.dumps({'subtasks': items})}\n```\n"


def _scores_shown(ctx: dict[str, Any]) -> dict[str, float]:
    subs = (ctx.get("feedback") or {}).get("subtasks") or []
    return {s["name"]: s["score"] for s in subs if isinstance(s, dict) and s.get("score") is not None}


def answer_revision(ctx: dict[str, Any], label: str) -> str:
    """Tighten the distance condition of the first subtask the shown judge scores call achieved (one subtask at most,
    the count kept); keep the rest."""
    shown, changes, items = _scores_shown(ctx), [], []
    for s in ctx["subtasks"]:
        m = _NORM.search(s.get("done_when", ""))
        if m and shown.get(s["name"], 0.0) >= 0.99 and not changes:
            tighter = round(float(m.group(3)) * 0.8, 4)
            s = {**s, "done_when": f"norm({m.group(1)} - {m.group(2)}) < {tighter}"}
            changes.append(f"tightened {s['name']!r} to {tighter}")
        items.append(s)
    note = "; ".join(changes) or "kept the list: no subtask was judged achieved"
    return f"{label}.\n```json\n{json.dumps({'subtasks': items, 'changes': note})}\n```\n"


def _rows(ctx: dict[str, Any]) -> list[dict[str, Any]]:
    rollout = ctx.get("rollout") or {}
    rows = {r["step"]: r for r in (rollout.get("keyframes") or []) + (rollout.get("state_table") or [])}
    return [rows[k] for k in sorted(rows)]


def _value(state: dict[str, Any], name: str) -> np.ndarray | None:
    v = state.get(name)
    return None if v is None else np.atleast_1d(np.asarray(v, dtype=float))


def _judge_one(sub: dict[str, str], rows: list[dict[str, Any]]) -> tuple[float, str, str]:
    """(fraction achieved in [0, 1], behaviour, rationale) of one subtask from the state rows."""
    cond = sub.get("done_when", "")
    if m := _NORM.search(cond):
        d = [float(np.linalg.norm(_value(r["state"], m.group(1)) - _value(r["state"], m.group(2))))
             for r in rows if _value(r["state"], m.group(1)) is not None and _value(r["state"], m.group(2)) is not None]
        if d:
            k = int(np.argmin(d))
            level = 1.0 if d[k] < float(m.group(3)) else (0.5 if d[k] < 0.5 * d[0] else 0.0)
            return level, (f"the distance {m.group(1)}-{m.group(2)} goes from {d[0]:.3f} to {d[-1]:.3f} "
                           f"(closest {d[k]:.3f} at step {rows[k]['step']})"), f"closest {d[k]:.3f} vs {m.group(3)}"
    if m := _MEAN.search(cond):
        v = [float(_value(r["state"], m.group(1))[0]) for r in rows if _value(r["state"], m.group(1)) is not None]
        if v:
            mean, target = float(np.mean(v)), float(m.group(2))
            level = 1.0 if mean > target else (0.5 if mean > 0 else 0.0)
            return level, f"{m.group(1)} averages {mean:.3f} over the rows shown", f"mean {mean:.3f} vs {target}"
    if m := _ABS.search(cond):
        v = [abs(float(_value(r["state"], m.group(1))[0])) for r in rows if _value(r["state"], m.group(1)) is not None]
        if v:
            frac = float(np.mean([x < float(m.group(2)) for x in v]))
            level = 1.0 if frac == 1.0 else (0.5 if frac >= 0.5 else 0.0)
            return level, f"|{m.group(1)}| stays below {m.group(2)} on {frac:.0%} of the rows shown", f"{frac:.0%} of rows"
    return 0.5, "not assessed", "the offline judge cannot read this condition or sees no state rows"


def answer_judge_score(ctx: dict[str, Any], label: str) -> str:
    """Score every subtask on the requested scale from the state rows shown (images are not viewed)."""
    rows = _rows(ctx)
    items = []
    for sub in ctx["subtasks"]:
        level, behaviour, why = _judge_one(sub, rows)  # 0, 0.5 or 1: on the three-point scale as it is
        score = level if ctx.get("scale") == "three_point" else round(level, 3)
        items.append({"name": sub["name"], "behaviour": behaviour, "rationale": f"{why} ({label})", "score": score})
    return json.dumps({"subtasks": items})


def _component_cues(fb: dict[str, Any]) -> list[str]:
    """Flat and dominant components, from the statistics the feedback shows (curves or per-step stats)."""
    if "component_stats" in fb:
        stats = {n: (s["mean"], s["max"] - s["min"]) for n, s in fb["component_stats"].items() if n != "reward"}
    else:
        stats = {}
        for n, vals in (fb.get("components") or {}).items():
            v = [x for x in vals if x == x]
            if v:
                stats[n] = (float(np.mean(v)), max(v) - min(v))
    total = sum(abs(m) for m, _ in stats.values())
    cues = [f"Component {n} barely changes." for n, (m, spread) in stats.items() if spread <= 0.05 * abs(m) + 1e-6]
    cues += [f"Component {n} dominates the reward." for n, (m, _) in stats.items()
             if len(stats) > 1 and abs(m) > 0.8 * total]
    return cues


def answer_summary(ctx: dict[str, Any], label: str) -> str:
    """A few sentences: the subtask's (or every subtask's) judge score and first rationale, score cues, component cues."""
    fb = ctx.get("feedback") or {}
    subs = [s for s in fb.get("subtasks") or [] if ctx.get("subtask") in (None, s["name"])]
    out = []
    for s in subs:
        first = s["judgements"][0] if s.get("judgements") else {}
        score = "no valid judgement" if s["score"] is None else f"{s['score']:.2f}"
        name = "" if ctx.get("subtask") else f"Subtask {s['name']}: "
        out.append(f"{name}judge score {score}; {first.get('behaviour', '')}.")
    scores = [x for x in fb.get("task_score") or [] if x == x]
    if scores and max(scores) <= 0.05:
        out.append("The task score stays near zero.")
    if fb.get("judge_score") is not None and fb["judge_score"] <= 0.05:
        out.append("The judge score is near zero.")
    out += _component_cues(fb)
    return " ".join(out) or f"Nothing stands out in this feedback ({label})."
