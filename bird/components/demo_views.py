"""How demonstrations and misscored states are shown to a generator: expert trajectories in the initial prompt,
and the misscored-demos mutation view (GRACE's incorrect trajectories with per-step rewards and debug output).

Every renderer returns (text, context) where context is the structured form of exactly the text."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from bird.config.schema import BirdConfig
from bird.prompts import IMPORT_INSTRUCTIONS, render_fields
from bird.registry import register
from bird.state import SearchState

__all__ = ["shown_expert_trajectories", "state_dict", "render_rows"]


def state_dict(spec: Any, row: np.ndarray) -> dict[str, Any]:
    """A state as named fields (always-zero padding left out), rounded to 3 decimals; a shaped field (BabyAI's grid)
    as nested lists of its shape, a text field as its string."""
    out: dict[str, Any] = {}
    for f in spec.obs_index.fields:
        if f.always_zero:
            continue
        v = row[f.start : f.start + f.size]
        if f.kind == "text":
            out[f.name] = "".join(chr(int(c)) for c in v if 0 < c < 0x110000)
        elif f.shape:
            whole = bool(np.all(v == np.round(v)))
            out[f.name] = (v.astype(int) if whole else np.round(v, 3)).reshape(f.shape).tolist()
        else:
            out[f.name] = round(float(v[0]), 3) if f.size == 1 else [round(float(x), 3) for x in v]
    return out


def _fmt(state: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in state.items())


def render_rows(rows: list[dict[str, Any]]) -> str:
    lines = []
    for r in rows:
        tags = [t for t in (r.get("mark"), f"reward={r['reward']:.3f}" if "reward" in r else None) if t]
        lines.append(f"  step {r['step']}{' [' + '; '.join(tags) + ']' if tags else ''}: {_fmt(r['state'])}")
        if r.get("debug"):
            lines.append(f"    debug_fn: {r['debug']}")
    return "\n".join(lines)


def _episode_rows(state: SearchState, eps: Any, episode: int, stride: int, reward: np.ndarray | None,
                  marks: dict[int, str], debug: dict[int, str]) -> list[dict[str, Any]]:
    rows_idx = np.flatnonzero(eps.episode == episode)
    keep = [i for k, i in enumerate(rows_idx) if k % stride == 0 or k == len(rows_idx) - 1 or int(i) in marks]
    out = []
    for i in keep:
        row: dict[str, Any] = {"step": int(eps.step[i]) + 1, "state": state_dict(state.spec, eps.states[i])}
        if reward is not None:
            row["reward"] = round(float(reward[i]), 4)
        if int(i) in marks:
            row["mark"] = marks[int(i)]
        if int(i) in debug:
            row["debug"] = debug[int(i)]
        out.append(row)
    return out


def shown_expert_trajectories(state: SearchState, rng: random.Random | None = None) -> tuple[str, list[dict[str, Any]]]:
    """A random subset of demos.n_shown expert trajectories of the train split (GRACE Phase 1: "a random subset of
    D+", drawn with `rng`, per prompt; without rng the first ones), one row every demos.stride steps; goal
    (positive) states are marked when not every expert state is positive."""
    eps = state.demos.train
    cfg_stride = state.demos.meta.get("stride", 25)
    pool = [i for i, s in enumerate(eps.source) if s == "expert"]
    n = min(state.demos.meta.get("n_shown", 2), len(pool))
    experts = rng.sample(pool, n) if rng is not None else pool[:n]
    mark_goals = bool((eps.label[np.isin(eps.episode, experts)] <= 0).any())
    shown, blocks = [], []
    for k, ep in enumerate(experts, start=1):
        marks = {int(i): "goal" for i in np.flatnonzero((eps.episode == ep) & (eps.label > 0))} if mark_goals else {}
        rows = _episode_rows(state, eps, ep, cfg_stride, None, marks, {})
        shown.append({"trajectory": k, "episode": int(ep), "rows": rows})
        blocks.append(f"Expert trajectory {k} ({int((eps.episode == ep).sum())} steps, every {cfg_stride}th shown"
                      f"{', goal states marked' if marks else ''}):\n" + render_rows(rows))
    return "\n\n".join(blocks), shown


@register("mutation_view", "feedback_text")
def _feedback_text(cfg: BirdConfig, state: SearchState, parent: str, rng: random.Random) -> tuple[dict, dict]:
    report = state.reports[parent]
    return {"feedback": report.feedback}, {"feedback": report.stats}


def _wrong_block(cfg: BirdConfig, state: SearchState, parent: str, rng: random.Random) -> tuple[str, list[dict]]:
    scores = state.demo_scores[parent]
    eps = scores.episodes
    rows = sorted(scores.debug) or []
    if not rows:
        return "(no misscored states: every expert state scores above 0 and every negative state below 0)", []
    kind = {1: "expert state scored low", -1: "negative state scored high"}
    if rng.random() < cfg.feedback.p_incorrect_state_only:
        shown = [{"label": "expert" if eps.label[i] > 0 else "negative", "step": int(eps.step[i]) + 1,
                  "reward": round(float(scores.reward[i]), 4), "state": state_dict(state.spec, eps.states[i]),
                  "debug": scores.debug.get(i, "")} for i in rows]
        text = "\n".join(f"- {r['label']} state (step {r['step']}), predicted reward {r['reward']:.3f}: {_fmt(r['state'])}"
                         + (f"\n    debug_fn: {r['debug']}" if r["debug"] else "") for r in shown)
        return text, shown
    blocks, shown = [], []
    for ep in sorted({int(eps.episode[i]) for i in rows}):
        marks = {i: "WRONG: " + kind[int(eps.label[i])] for i in rows if eps.episode[i] == ep}
        lab = "expert" if (eps.label[eps.episode == ep] > 0).any() else "negative"
        ep_rows = _episode_rows(state, eps, ep, cfg.demos.stride, scores.reward, marks, scores.debug)
        shown.append({"label": lab, "rows": ep_rows})
        blocks.append(f"Incorrect {lab} trajectory (predicted reward at each shown step):\n" + render_rows(ep_rows))
    return "\n\n".join(blocks), shown


def _expert_block(cfg: BirdConfig, state: SearchState, parent: str, rng: random.Random) -> tuple[str, list[dict]]:
    if rng.random() >= cfg.feedback.p_expert_trajectory:
        return "", []
    scores = state.demo_scores[parent]
    eps = scores.episodes
    experts = [i for i, s in enumerate(eps.source) if s == "expert"]
    ep = rng.choice(experts)
    rows = _episode_rows(state, eps, ep, cfg.demos.stride, scores.reward, {}, {})
    if rng.random() < cfg.feedback.p_expert_state_only:  # only its goal (positive) states
        pos_steps = {int(eps.step[i]) + 1 for i in np.flatnonzero((eps.episode == ep) & (eps.label > 0))}
        rows = [r for r in rows if r["step"] in pos_steps][-10:]
        title = "Goal states of an expert trajectory (current reward shown):"
    else:
        title = "An expert trajectory (current reward at each shown step):"
    return title + "\n" + render_rows(rows), rows


@register("mutation_view", "misscored_demos")
def _misscored(cfg: BirdConfig, state: SearchState, parent: str, rng: random.Random) -> tuple[dict, dict]:
    """GRACE's mutation context: misscored states (whole trajectories or the states alone) with the predicted
    reward per step and the program's debug_fn output; sometimes an expert trajectory (GRACE App. A.4 Table 6 knobs)."""
    wrong_text, wrong = _wrong_block(cfg, state, parent, rng)
    expert_text, expert = _expert_block(cfg, state, parent, rng)
    fields = {"incorrect_trajectories": wrong_text, "expert_traj_str": expert_text,
              "state_description": render_fields(state.spec, cfg.generate.field_view), "import_instructions": IMPORT_INSTRUCTIONS}
    return fields, {"wrong_examples": wrong, "expert_trajectory": expert}
