"""The offline synthesiser's answers to decomposition, progress-program (PRM4RL) and judge requests. Each reads only
its request's context: the observation index and task text (decompose, progress), or the component statistics and
state rows shown to the judge (it sees no images). Answers are deterministic and labelled offline."""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["answer_decompose", "answer_progress", "answer_judge"]

REACHED = 0.06  # m: a pair of positions counts as together below this distance (a fixed heuristic, not tuned)
SCALE = 0.3  # m: the distance at which a subtask's own progress is 0


def _is(name: str, words: str) -> bool:
    """A whole word of a snake_case name ("drawer_handle_pos" is not a hand)."""
    return re.search(rf"(^|_)({words})(_|$)", name) is not None


def _stages(ctx: dict[str, Any]) -> list[tuple[str, str]]:
    """(a, b) position pairs to bring together, in order: hand → object, then object → goal."""
    pos = [f["name"] for f in ctx["obs_fields"] if f["kind"] in ("position", "goal") and f["size"] >= 2
           and not f.get("always_zero") and not _is(f["name"], "prev|previous|last")]
    hand = [n for n in pos if _is(n, "hand|gripper|tcp|ee|finger|fingertip")]
    goal = [n for n in pos if n not in hand and (_is(n, "goal|target") or any(
        f["name"] == n and f["kind"] == "goal" for f in ctx["obs_fields"]))]
    objs = [n for n in pos if n not in hand and n not in goal]
    pairs = [(hand[0], objs[0])] if hand and objs else []
    pairs += [(objs[0], goal[0])] if objs and goal else []
    return pairs or ([(hand[0], goal[0])] if hand and goal else [])


def answer_decompose(ctx: dict[str, Any], label: str) -> str:
    """A chain graph start → … → goal, one reward edge per position pair, success = distance below REACHED."""
    pairs = _stages(ctx)
    nodes = [{"id": "n0", "status": "initial state: " + ", ".join(f"{a} away from {b}" for a, b in pairs[:1]) or "start"}]
    edges = []
    for i, (a, b) in enumerate(pairs, start=1):
        nodes.append({"id": f"n{i}", "status": f"{a} at {b}"})
        edges.append({"src": f"n{i - 1}", "dst": f"n{i}", "behavior": f"bring {a} to {b}", "substep_type": "reward",
                      "success_condition": f"norm({a} - {b}) < {REACHED}", "alt_rank": 0})
    graph = {"nodes": nodes, "edges": edges, "start": "n0", "goal": nodes[-1]["id"]}
    return f"{label}: a chain graph from the position fields of the observation index.\n```json\n{json.dumps(graph)}\n```\n"


def answer_progress(ctx: dict[str, Any], label: str) -> str:
    """plan_list, Ψ and Φ: subtask k = bring pair k together; Φ = (k + own progress of k) / K in [0, 1]."""
    pairs = _stages(ctx) or [(ctx["obs_fields"][0]["name"], ctx["obs_fields"][0]["name"])]
    plan = [f"Move to {b}" if i == 0 and len(pairs) > 1 else f"Move {a} to {b}" for i, (a, b) in enumerate(pairs)]
    lines = [f"# {label}: subtasks from the position fields of the observation index", "import numpy as np", "",
             f"plan_list = {plan!r}", f"PAIRS = {[list(p) for p in pairs]!r}", f"REACHED = {REACHED}", f"SCALE = {SCALE}",
             "", "", "def _distance(obs, k):", "    a, b = PAIRS[k]",
             "    return float(np.linalg.norm(np.asarray(obs[a]) - np.asarray(obs[b])))", "", "",
             "def determine_subtask(obs):", "    # the first subtask whose pair is not yet together; the last one otherwise",
             "    for k in range(len(PAIRS) - 1):", "        if _distance(obs, k) >= REACHED:", "            return k",
             "    return len(PAIRS) - 1", "", "",
             "def progress(obs):", "    # completed subtasks plus the current one's own progress, in [0, 1]",
             "    k = determine_subtask(obs)", "    own = min(max(1.0 - _distance(obs, k) / SCALE, 0.0), 1.0)",
             "    return (k + own) / len(plan_list)"]
    return f"{label}.\n\n```python\n" + "\n".join(lines) + "\n```\n"


def answer_judge(ctx: dict[str, Any], label: str) -> str:
    """Problems read off the component statistics: flat components, a dominant component, a flat total reward."""
    stats: dict[str, dict[str, float]] = ctx.get("component_stats", {})
    comps = {n: s for n, s in stats.items() if n != "reward"}
    problems, suggestions = [], []
    for n, s in comps.items():
        if s["std"] <= 0.05 * abs(s["mean"]) + 1e-6:
            problems.append(f"{n} barely changes along the rollouts (std {s['std']:.3g})")
            suggestions.append(f"rescale {n} or change its temperature so it varies with the behaviour")
    total = sum(abs(s["mean"]) for s in comps.values())
    for n, s in comps.items():
        if total > 0 and abs(s["mean"]) > 0.8 * total and len(comps) > 1:
            problems.append(f"{n} dominates the reward ({abs(s['mean']) / total:.0%} of the mean magnitude)")
            suggestions.append(f"lower the weight of {n}")
    episodes = ctx.get("episodes", [])
    seen = f"{len(episodes)} rollouts as state text" if episodes else f"{ctx.get('n_frames', 0)} keyframes (not viewed)"
    reward = stats.get("reward", {})
    answer = {"rollout_description": f"{label}; it read the component statistics and {seen}. Reward per step: mean "
                                     f"{reward.get('mean', float('nan')):.3f}, std {reward.get('std', float('nan')):.3f}.",
              "motion_problems": problems, "redesign_suggestions": suggestions or ["keep the structure; retune weights"]}
    return json.dumps(answer)
