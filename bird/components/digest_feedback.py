"""The feedback format `fitness_digest`: BIRD's release feedback for a candidate no judge scored, as its ERA-S shows it
(safety-research/bird@54a9ce3:bird/components/evaluation.py `feedback_default`: `_section_header` names the
selection scalar and its source, `_section_subtasks` is empty without judge scores, and `_section_summary` digests
each rollout through `_behaviour_digest`: success where the benchmark ships a flag, length, the candidate's own
return and its mean per step). The fitness and the success flags are shown only with feedback.show_score."""

from __future__ import annotations

from typing import Any

import numpy as np

from bird.components.fitness import Evidence
from bird.config.schema import BirdConfig
from bird.envs.registry import suite_defines_success
from bird.learners.rollouts import load_rollouts
from bird.registry import get, register
from bird.state import SearchState
from bird.types import Candidate, TrainResult

__all__: list[str] = []


def _fitness(cfg: BirdConfig, state: SearchState, res: TrainResult) -> float | None:
    """The value that ranks the candidate (feedback.fitness over its curve), as the feedback stage computes it."""
    ev = Evidence(res.curve, cfg.feedback.aggregate, suite=state.spec.suite, shipped=res.shipped)
    value = get("fitness", cfg.feedback.fitness)(ev)
    return None if value is None or not np.isfinite(value) else float(value)


def _rollout_rows(cfg: BirdConfig, state: SearchState, data: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    success = cfg.feedback.show_score and suite_defines_success(state.spec.suite)
    rows = []
    for ep in range(min(cfg.train.collect_episodes, len(data["length"]))):
        rewards = data["reward"][data["episode"] == ep]
        row: dict[str, Any] = {"rollout": ep + 1, "length": int(data["length"][ep]),
                               "return": round(float(np.sum(rewards)), 4),
                               "mean_per_step": round(float(np.mean(rewards)) if len(rewards) else 0.0, 4)}
        if success:
            row["success"] = bool(data["score"][ep] > 0)
        rows.append(row)
    return rows


@register("feedback_format", "fitness_digest", needs={"train.collect_episodes": 1})
def _fitness_digest(cfg: BirdConfig, state: SearchState, cand: Candidate, res: TrainResult | None) -> tuple[str, dict]:
    """The ranking fitness with its source (feedback.show_score) and one line per collected rollout: its length, the
    candidate's own return and mean reward per step, and (feedback.show_score, a suite with a success flag) success."""
    if res is None or not res.curve:
        return "The reward was not used to train a policy.", {}
    stats: dict[str, Any] = {}
    lines = []
    if cfg.feedback.show_score:
        stats["fitness"] = _fitness(cfg, state, res)  # named by the config's word, never the hidden signal's name
        shown = "none" if stats["fitness"] is None else f"{stats['fitness']:.4f}"
        lines.append(f"The policy trained with this reward: fitness {shown} (source {cfg.feedback.fitness}, "
                     f"{cfg.feedback.aggregate} checkpoint).")
    if res.rollouts_path:
        stats["rollouts"] = _rollout_rows(cfg, state, load_rollouts(res.rollouts_path))
        lines.append(f"Its rollouts ({len(stats['rollouts'])}), under this reward:")
        lines += [f"  rollout {r['rollout']}: " + (f"success={r['success']} " if "success" in r else "")
                  + f"length={r['length']} return={r['return']:.3f} mean_per_step={r['mean_per_step']:.3f}"
                  for r in stats["rollouts"]]
    return "\n".join(lines) or "The policy's rollouts were not recorded.", stats
