"""Feedback formats (registry family feedback_format): Eureka's per-component curves, misscored demonstrations
(GRACE), process + trajectory feedback after a passed screen and preference feedback after a failed one (CARD)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from bird.components.demo_views import state_dict
from bird.components.fitness import shown_scores, subsample
from bird.config.schema import BirdConfig
from bird.envs.registry import suite_defines_success
from bird.learners.rollouts import load_rollouts
from bird.prompts import templates
from bird.registry import register
from bird.state import SearchState
from bird.types import Candidate, TrainResult

__all__: list[str] = []


def _line(name: str, values: list[float]) -> str:
    vals = [v for v in values if not math.isnan(v)]
    if not vals:
        return f"{name}: no completed episodes"
    shown = ", ".join(f"{v:.2f}" for v in values)
    return f"{name}: [{shown}], Max: {max(vals):.2f}, Mean: {sum(vals) / len(vals):.2f}, Min: {min(vals):.2f}"


@register("feedback_format", "none", needs_policy=False)
def _no_feedback(cfg: BirdConfig, state: SearchState, cand: Candidate, res: TrainResult | None) -> tuple[str, dict]:
    """Nothing is shown (a search with no generator: method=oracle)."""
    return "", {}


@register("feedback_format", "eureka")
def _eureka(cfg: BirdConfig, state: SearchState, cand: Candidate, res: TrainResult | None) -> tuple[str, dict]:
    """Per-component curves with Max/Mean/Min, plus task_score (when shown) and episode length."""
    curve = res.curve if res is not None else ()
    if not curve:
        return "The reward was not used to train a policy.", {}
    idx = subsample(len(curve), cfg.feedback.curve_points)
    pts = [curve[i] for i in idx]
    stats: dict = {"components": {}, "episode_length": [c.episode_length for c in pts]}
    for name in sorted({k for c in pts for k in c.components}):
        stats["components"][name] = [c.components.get(name, float("nan")) for c in pts]
    if cfg.feedback.show_score:
        stats["task_score"] = shown_scores(cfg.feedback.score_shown, state.spec.suite, pts)
    lines = [_line(n, v) for n, v in stats["components"].items()]
    if "task_score" in stats:
        lines.append(_line("task_score", stats["task_score"]))
    lines.append(_line("episode_length", stats["episode_length"]))
    every = pts[1].env_steps - pts[0].env_steps if len(pts) > 1 else pts[0].env_steps
    text = templates(cfg.generate.prompt)["policy_feedback"].format(epoch_freq=every, feedback_lines="\n".join(lines))
    return text, stats


@register("feedback_format", "misscored_demos", needs_policy=False)
def _misscored(cfg: BirdConfig, state: SearchState, cand: Candidate, res: TrainResult | None) -> tuple[str, dict]:
    """What the reward gets wrong on the demonstrations (the mutation view renders it per prompt)."""
    scores = state.demo_scores.get(cand.id)
    if scores is None:
        return "The reward was not scored on the demonstrations.", {}
    eps = scores.episodes
    wrong = [{"label": "expert" if eps.label[i] > 0 else "negative", "step": int(eps.step[i]) + 1,
              "reward": round(float(scores.reward[i]), 4), "state": state_dict(state.spec, eps.states[i]),
              "debug": scores.debug.get(i, "")} for i in sorted(scores.debug)]
    lines = [f"- {w['label']} state (step {w['step']}), predicted reward {w['reward']:.3f}; debug_fn: {w['debug']}"
             for w in wrong]
    text = "Misscored demonstration states:\n" + ("\n".join(lines) or "(none)")
    return text, {"wrong_examples": wrong}


def _trajectory_rows(cfg: BirdConfig, state: SearchState, data: dict[str, np.ndarray], ep: int) -> list[dict]:
    idx = np.flatnonzero(data["episode"] == ep)
    keep = [i for k, i in enumerate(idx) if k % cfg.feedback.trajectory_stride == 0 or k == len(idx) - 1]
    comps = sorted(k[5:] for k in data if k.startswith("comp/"))
    rows = []
    for k, i in zip([int(np.flatnonzero(idx == i)[0]) for i in keep], keep, strict=True):
        row = {"step": k + 1, "reward": round(float(data["reward"][i]), 1), "state": state_dict(state.spec, data["next_obs"][i])}
        row["components"] = {c: round(float(data[f"comp/{c}"][i]), 1) for c in comps}
        rows.append(row)
    return rows


def _render_traj(title: str, traj: dict[str, Any]) -> str:
    lines = [f"{title}: return {traj['return']:.1f}, length {traj['length']}, per-step average {traj['per_step']:.3f}"]
    for r in traj["rows"]:
        comps = ", ".join(f"{k}={v}" for k, v in r.get("components", {}).items())
        lines.append(f"  step {r['step']}: reward={r['reward']}{'; ' + comps if comps else ''}; "
                     + ", ".join(f"{k}={v}" for k, v in r["state"].items()))
    if "solved" in traj:
        lines.append("  The agent solved the task in this episode." if traj["solved"]
                     else "  The agent did not solve the task before the horizon.")
    return "\n".join(lines)


def _best_worst(cfg: BirdConfig, state: SearchState, res: TrainResult) -> dict[str, Any]:
    """The highest- and lowest-return rollouts (own reward); whether each solved the task only on a suite that defines
    success."""
    if not res.rollouts_path:
        return {}
    data = load_rollouts(res.rollouts_path)
    returns = np.array([data["reward"][data["episode"] == e].sum() for e in range(len(data["length"]))])
    out = {}
    for name, ep in (("highest_return", int(np.argmax(returns))), ("lowest_return", int(np.argmin(returns)))):
        out[name] = {"return": float(returns[ep]), "length": int(data["length"][ep]),
                     "per_step": float(returns[ep] / data["length"][ep]),
                     "rows": _trajectory_rows(cfg, state, data, ep)}
        if suite_defines_success(state.spec.suite):
            out[name]["solved"] = bool(data["score"][ep] >= cfg.verify.tpe_success_score)
    return out


@register("feedback_format", "process")
def _process(cfg: BirdConfig, state: SearchState, cand: Candidate, res: TrainResult | None) -> tuple[str, dict]:
    """CARD's process feedback (checkpoint statistics) followed by its trajectory feedback (best/worst rollout). The
    success rate (feedback.show_score) is shown only on a suite that defines success: Gym MuJoCo has none, and BIRD's
    release prints no success line there (safety-research/bird@54a9ce3:bird/components/evaluation.py
    `_env_defines_success`, `_show_env_success`)."""
    t = templates(cfg.generate.prompt)
    show_success = cfg.feedback.show_score and suite_defines_success(state.spec.suite)
    curve = res.curve if res is not None else ()
    pts = [curve[i] for i in subsample(len(curve), cfg.feedback.curve_points)]
    stats: dict[str, Any] = {"env_steps": [c.env_steps for c in pts], "own_return": [c.own_return for c in pts],
                             "episode_length": [c.episode_length for c in pts],
                             "components": {n: [c.components.get(n, math.nan) for c in pts]
                                            for n in sorted({k for c in pts for k in c.components})}}
    if show_success:
        stats["task_score"] = [c.score for c in pts]
    lines = []
    for k, c in enumerate(pts):
        parts = [f"timestep {c.env_steps}", f"return (own reward) {c.own_return:.2f}", f"episode length {c.episode_length:.0f}"]
        if show_success:
            parts.append(f"success rate {100 * c.score:.0f}%")
        parts += [f"{n} (mean per step) {v[k]:.3f}" for n, v in stats["components"].items()]
        lines.append("- " + "; ".join(parts))
    trajs = _best_worst(cfg, state, res) if res is not None else {}
    stats["trajectories"] = trajs
    traj_text = "\n".join(_render_traj(n.replace("_", " ") + " rollout", v) for n, v in trajs.items())
    text = t["process_feedback"].format(checkpoints="\n".join(lines), trajectories=traj_text or "(none collected)")
    return text, stats


@register("feedback_format", "preference")
def _preference(cfg: BirdConfig, state: SearchState, cand: Candidate, res: TrainResult | None) -> tuple[str, dict]:
    """CARD's preference feedback after a failed TPE screen: how often successes outscore failures, and the
    lowest-scoring success next to the highest-scoring failure under the new reward."""
    verdict = state.screens.get(cand.id, {}).get("tpe", {})
    stats = {"preference": {k: verdict.get(k) for k in ("rate", "n_success", "n_below", "threshold")}}
    blocks = [_render_traj(t, verdict[k]) for t, k in (("lowest-scoring successful trajectory", "worst_success"),
                                                        ("highest-scoring failed trajectory", "best_failure")) if k in verdict]
    stats["preference"]["trajectories"] = {k: verdict[k] for k in ("worst_success", "best_failure") if k in verdict}
    text = templates(cfg.generate.prompt)["preference_feedback"].format(
        n_success=verdict.get("n_success", 0), n_below=verdict.get("n_below", 0),
        accuracy=100 * (verdict.get("rate") or 0.0), trajectories="\n".join(blocks))
    return text, stats
