"""The offline synthesiser's answers to demonstration-driven requests (GRACE's reward-class contract): a JSON
object {reasoning, reward_class_code}. It reads only the request context: the state fields, the expert trajectories
shown (initial request), or the parent code and the misscored states shown with their rewards (mutation). A
goal-state request (GRACE P0.1) is answered {reasoning, goal_state_indexes} from the one trajectory shown.

Programs: r(s) = offset + Σ_i [bonus_i · 1(d_i(s) < θ_i) + w_i / (1 + d_i(s)/σ_i)], d_i = distance of two
position fields; on a state with no two 3-d positions (a walker's joint angles and velocities), feature programs
r(s) = offset + Σ_i w_i · sign_i · (s[f_i] - c_i) / σ_i over scalar fields, picked by how they separate the expert's
goal states from its first ones (initial) or the misscored expert states from the negative ones (mutation). The term
spec rides in a comment line, as in terms.py."""

from __future__ import annotations

import json
import random
from typing import Any

import numpy as np

from bird.llm.base import LLMError
from bird.llm.offline.terms import SPEC_MARKER

__all__ = ["answer_demo_request", "answer_goal_states"]


def _pairs(fields: list[dict]) -> list[tuple[str, str]]:
    pos = [f["name"] for f in fields if f.get("unit") == "m" and f["size"] == 3  # 3-d positions, from units alone
           and not f.get("always_zero") and not f["name"].startswith("prev_")]
    return [(a, b) for i, a in enumerate(pos) for b in pos[i + 1 :]]


def _dist(state: dict[str, Any], pair: tuple[str, str]) -> float | None:
    a, b = state.get(pair[0]), state.get(pair[1])
    if a is None or b is None:
        return None
    return float(np.linalg.norm(np.asarray(a, dtype=float) - np.asarray(b, dtype=float)))


def _scalars(fields: list[dict]) -> list[str]:
    return [f["name"] for f in fields if f["size"] == 1 and not f.get("always_zero")]


def _values(states: list[dict[str, Any]], name: str) -> list[float]:
    return [float(np.mean(s[name])) for s in states if s.get(name) is not None]


def _render_features(spec: dict[str, Any], note: str) -> str:
    names = list(dict.fromkeys(t["f"] for t in spec["terms"]))
    lines = [f"# {note}", SPEC_MARKER + json.dumps(spec, separators=(",", ":")), "import numpy as np", "", "",
             "class Reward:", '    """Rewards moving the chosen state features the way the expert moves them."""', "",
             "    def __init__(self, extra_info=None):", "        self.extra_info = extra_info", "",
             "    def reward_fn(self, state):", f"        reward = {spec['offset']!r}"]
    for t in spec["terms"]:
        lines.append(f"        reward += {t['w'] * t['sign']!r} * (float(np.mean(state[{t['f']!r}])) - {t['c']!r}) "
                     f"/ {t['s']!r}")
    lines += ["        return reward", "", "    def debug_fn(self, state):",
              "        return '; '.join(f'{k}=' + str(round(float(np.mean(state[k])), 4)) for k in " + repr(names) + ")"]
    return "\n".join(lines) + "\n"


def _feature_term(name: str, sign: float, centre: float, spread: float, rng: random.Random) -> dict[str, Any]:
    return {"f": name, "sign": 1.0 if sign >= 0 else -1.0, "c": round(centre, 4), "s": round(max(spread, 1e-3), 4),
            "w": rng.choice((0.5, 1.0))}


def _initial_features(ctx: dict[str, Any], names: list[str], rng: random.Random) -> tuple[dict, str]:
    """The scalar field that moves most (in its own spread) from the expert's first states to its goal states."""
    first, goal, every = [], [], []
    for traj in ctx.get("expert_trajectories", []):
        rows = traj["rows"]
        first.append(rows[0]["state"])
        goal += [r["state"] for r in rows if r.get("mark") == "goal"] or [r["state"] for r in rows[-max(1, len(rows) // 4):]]
        every += [r["state"] for r in rows]
    moves = {}
    for f in names:
        v0, vg, va = _values(first, f), _values(goal, f), _values(every, f)
        if v0 and vg:
            moves[f] = ((np.mean(vg) - np.mean(v0)) / (np.std(va) + 1e-6), float(np.mean(v0)), float(np.std(va)))
    ranked = sorted(moves, key=lambda f: -abs(moves[f][0])) or names[:1]
    f = ranked[0] if len(ranked) == 1 or rng.random() < 0.7 else ranked[1]
    move, centre, spread = moves.get(f, (1.0, 0.0, 1.0))
    spec = {"mode": "features", "offset": rng.choice((0.0, -0.5)), "terms": [_feature_term(f, move, centre, spread, rng)]}
    return spec, f"{f} {'rises' if move >= 0 else 'falls'} most from the expert's first states to its goal states"


def _mutate_features(spec: dict, wrong: list[tuple[str, dict, float]], names: list[str],
                     rng: random.Random) -> tuple[dict, str]:
    """Add the field that best separates the misscored expert and negative states, else rescale a term."""
    spec = json.loads(json.dumps(spec))
    e = [s for lab, s, _ in wrong if lab == "expert"]
    n = [s for lab, s, _ in wrong if lab == "negative"]
    gaps = {}
    for f in names:
        ve, vn = _values(e, f), _values(n, f)
        if ve and vn:
            gaps[f] = ((np.mean(ve) - np.mean(vn)) / (np.std(ve + vn) + 1e-6), (np.mean(ve) + np.mean(vn)) / 2,
                       float(np.std(ve + vn)))
    best = max(gaps, key=lambda f: abs(gaps[f][0]), default=None)
    if best is not None and all(t["f"] != best for t in spec["terms"]) and rng.random() < 0.6:
        spec["terms"].append(_feature_term(best, gaps[best][0], gaps[best][1], gaps[best][2], rng))
        return spec, f"{best} separates the misscored expert and negative states: add it"
    t = rng.choice(spec["terms"])
    t["w"] = round(t["w"] * rng.choice((0.5, 2.0)), 4)
    return spec, f"rescale the weight of {t['f']}"


def _render(spec: dict[str, Any], pairs: list[tuple[str, str]], note: str) -> str:
    lines = [f"# {note}", SPEC_MARKER + json.dumps(spec, separators=(",", ":")), "import numpy as np", "", "",
             "def distance(a, b):", "    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)))", "", "",
             "class Reward:", '    """High reward when the tracked distances are small (goal reached), shaping otherwise."""', "",
             "    def __init__(self, extra_info=None):", "        self.extra_info = extra_info", "",
             "    def reward_fn(self, state):", f"        reward = {spec['offset']!r}"]
    for i, t in enumerate(spec["terms"]):
        lines += [f"        d{i} = distance(state[{t['a']!r}], state[{t['b']!r}])",
                  f"        if d{i} < {t['theta']!r}:", f"            reward += {t['bonus']!r}",
                  f"        reward += {t['w']!r} / (1.0 + d{i} / {t['sigma']!r})"]
    lines += ["        return reward", "", "    def debug_fn(self, state):", "        parts = []"]
    for a, b in pairs:
        lines.append(f"        parts.append('d({a},{b})=' + str(round(distance(state[{a!r}], state[{b!r}]), 4)))")
    lines.append("        return '; '.join(parts)")
    return "\n".join(lines) + "\n"


def _initial(ctx: dict[str, Any], pairs: list[tuple[str, str]], rng: random.Random) -> tuple[dict, str]:
    """Pick the pair whose distance shrinks most along the shown expert trajectories; threshold at its end value."""
    shrink: dict[tuple[str, str], tuple[float, float]] = {}
    for p in pairs:
        starts, ends = [], []
        for traj in ctx.get("expert_trajectories", []):
            rows = traj["rows"]
            goal = [r for r in rows if r.get("mark") == "goal"] or rows[-max(1, len(rows) // 4):]
            d0, de = _dist(rows[0]["state"], p), [_dist(r["state"], p) for r in goal]
            if d0 is not None and all(d is not None for d in de):
                starts.append(d0)
                ends.append(max(de))  # type: ignore[type-var]
        if starts:
            shrink[p] = ((np.mean(starts) - np.mean(ends)) / (np.mean(starts) + 1e-6), float(np.max(ends)))
    ranked = sorted(shrink, key=lambda p: -shrink[p][0]) or pairs[:1]
    pair = ranked[0] if len(ranked) == 1 or rng.random() < 0.7 else ranked[1]
    end = shrink.get(pair, (0.0, 0.05))[1]
    term = {"a": pair[0], "b": pair[1], "theta": round(max(end, 0.01) * rng.choice((1.0, 1.5, 2.0, 3.0)), 4),
            "bonus": rng.choice((10.0, 100.0)), "w": rng.choice((0.5, 0.99)), "sigma": rng.choice((0.05, 0.1, 0.3))}
    spec = {"offset": rng.choice((0.0, -0.5, -1.0)), "terms": [term]}
    return spec, f"the distance {pair[0]}–{pair[1]} shrinks most along the expert trajectories; reward reaching it"


def _wrong(ctx: dict[str, Any]) -> list[tuple[str, dict, float]]:
    """(label, state, predicted reward) of every misscored state shown."""
    out = []
    for item in ctx.get("wrong_examples", []):
        if "rows" in item:
            out += [(item["label"], r["state"], r.get("reward", 0.0)) for r in item["rows"]
                    if str(r.get("mark", "")).startswith("WRONG")]
        else:
            out.append((item["label"], item["state"], item.get("reward", 0.0)))
    return out


def _separation(wrong: list[tuple[str, dict, float]], pair: tuple[str, str]) -> float:
    e = [d for lab, s, _ in wrong if lab == "expert" and (d := _dist(s, pair)) is not None]
    n = [d for lab, s, _ in wrong if lab == "negative" and (d := _dist(s, pair)) is not None]
    if not e or not n:
        return 0.0
    return float(np.mean([[1.0 if x < y else 0.5 if x == y else 0.0 for y in n] for x in e]))


def _mutate(spec: dict, wrong: list[tuple[str, dict, float]], pairs: list[tuple[str, str]],
            rng: random.Random) -> tuple[dict, str]:  # noqa: C901 - one branch per corrective move
    spec = json.loads(json.dumps(spec))
    t = rng.choice(spec["terms"])
    pair = (t["a"], t["b"])
    e = [d for lab, s, _ in wrong if lab == "expert" and (d := _dist(s, pair)) is not None]
    n = [d for lab, s, _ in wrong if lab == "negative" and (d := _dist(s, pair)) is not None]
    n_high = [r for lab, _, r in wrong if lab == "negative"]
    move = rng.random()
    if not wrong:
        t["sigma"] = round(t["sigma"] * rng.choice((0.5, 2.0)), 4)
        return spec, "no misscored states shown: adjust the shaping scale"
    if move < 0.4 and (e or n):
        if e and n and max(e) < min(n):
            t["theta"] = round((max(e) + min(n)) / 2, 4)
            why = "threshold moved between the misscored expert and negative distances"
        elif e and (not n or rng.random() < 0.5):
            t["theta"] = round(float(np.percentile(e, rng.choice((50, 75, 100)))) * 1.05, 4)
            why = "threshold raised so the misscored expert states count as reaching the goal"
        else:
            t["theta"] = round(max(min(n) * 0.95, 1e-3), 4)
            why = "threshold lowered below the misscored negative states"
    elif move < 0.7 and n_high:
        if rng.random() < 0.5:
            spec["offset"] = round(spec["offset"] - rng.choice((0.5, 1.0)), 4)
            why = "negative states scored too high: lower the baseline"
        else:
            t["w"] = round(t["w"] * 0.5, 4)
            t["sigma"] = round(t["sigma"] * rng.choice((0.5, 1.0)), 4)
            why = "negative states scored too high: weaken and sharpen the shaping"
    elif move < 0.85:
        best = max(pairs, key=lambda p: _separation(wrong, p))
        if best != pair and all((x["a"], x["b"]) != best for x in spec["terms"]) and _separation(wrong, best) > 0.5:
            spec["terms"].append({**t, "a": best[0], "b": best[1]})
            why = f"the distance {best[0]}–{best[1]} separates the misscored states: add it"
        else:
            t["bonus"] = round(t["bonus"] * rng.choice((0.5, 2.0)), 4)
            why = "rescale the goal bonus"
    else:
        spec["offset"] = round(spec["offset"] + rng.choice((-0.5, 0.5)), 4)
        t["sigma"] = round(t["sigma"] * rng.choice((0.5, 2.0)), 4)
        why = "adjust the baseline and shaping scale"
    return spec, why


def answer_demo_request(ctx: dict[str, Any], purpose: str, rng: random.Random, label: str) -> str:
    """Distance programs over two 3-d position fields (Meta-World), else feature programs over scalar fields (a
    walker's joints); raises LLMError when the state has neither."""
    pairs, names = _pairs(ctx["obs_fields"]), _scalars(ctx["obs_fields"])
    if not pairs and not names:
        shown = ", ".join(f"{f['name']} ({f['size']}, {f.get('unit') or 'no unit'})" for f in ctx["obs_fields"][:8])
        raise LLMError(f"offline synthesiser cannot write a {purpose!r} reward class for this state: its programs "
                       f"reward distances between two 3-d position fields (unit m) or scalar fields, and the state has "
                       f"neither (fields: {shown}{', ...' if len(ctx['obs_fields']) > 8 else ''})")
    parent = None
    for line in (ctx.get("parent_code") or "").splitlines():
        if line.startswith(SPEC_MARKER):
            parent = json.loads(line[len(SPEC_MARKER):])
    if not pairs:  # a state of joint angles and velocities: feature programs
        if purpose == "mutation" and parent is not None and parent.get("mode") == "features":
            spec, why = _mutate_features(parent, _wrong(ctx), names, rng)
        else:
            spec, why = _initial_features(ctx, names, rng)
        return json.dumps({"reasoning": f"{label}: {why}", "reward_class_code": _render_features(spec, label)})
    if purpose == "mutation" and parent is not None:
        spec, why = _mutate(parent, _wrong(ctx), pairs, rng)
    else:
        spec, why = _initial(ctx, pairs, rng)
    return json.dumps({"reasoning": f"{label}: {why}", "reward_class_code": _render(spec, pairs, label)})


def answer_goal_states(ctx: dict[str, Any], label: str) -> str:
    """The shown states where the distance that shrinks most along the trajectory has (nearly) reached its minimum:
    within 10% of its drop from the first state; -1 when no distance shrinks by at least 10%. A state with no two 3-d
    positions: the last quarter of the shown states."""
    rows = ctx.get("trajectory", [])
    if not _pairs(ctx["obs_fields"]) and rows:  # joint angles and velocities: the behaviour the expert settles into
        goals = [r["index"] for r in rows[-max(1, len(rows) // 4):]]
        return json.dumps({"reasoning": f"{label}: no positions to bring together; the goal states are the last "
                                        "quarter of the trajectory, the gait the expert settles into",
                           "goal_state_indexes": goals})
    best, shrink = None, 0.1
    for pair in _pairs(ctx["obs_fields"]):
        d = [_dist(r["state"], pair) for r in rows]
        if not d or any(x is None for x in d):
            continue
        drop = (d[0] - min(d)) / (d[0] + 1e-9)
        if drop > shrink:
            best, shrink = (pair, d), drop
    if best is None:
        return json.dumps({"reasoning": f"{label}: no distance between positions shrinks along the trajectory",
                           "goal_state_indexes": -1})
    (a, b), d = best
    near = min(d) + 0.1 * (d[0] - min(d))
    goals = [r["index"] for r, x in zip(rows, d, strict=True) if x <= near]
    return json.dumps({"reasoning": f"{label}: the distance {a}-{b} shrinks most; the goal states are where it has "
                                    "nearly reached its minimum", "goal_state_indexes": goals})
