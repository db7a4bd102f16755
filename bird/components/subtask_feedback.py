"""The judge score as fitness (fitness `judge_score`) and the per-subtask feedback built on it (feedback format
`subtask_judge`): RDA's ranking signal and feedback (safety-research/bird@54a9ce3:configs/methods/rda.yaml:
vlm_score, per_subtask, rationale).
An unsupervised method ranks on this and sees nothing of the benchmark score or the reference reward."""

from __future__ import annotations

import math
from typing import Any

from bird.components.fitness import shown_scores
from bird.components.judge import component_stats
from bird.config.schema import BirdConfig
from bird.learners.rollouts import load_rollouts
from bird.registry import register
from bird.state import SearchState
from bird.types import Candidate, TrainResult

__all__: list[str] = []


@register("fitness", "judge_score", needs_judgement=True)
def _judge_score(ev: Any) -> float | None:
    """The judge's mean normalised score over subtasks (None when the judge gave no valid answer)."""
    return ev.judgement.get("score") if ev.judgement else None




def _fmt(score: float | None) -> str:
    return "no valid judgement" if score is None or math.isnan(score) else f"{score:.2f}"


@register("feedback_format", "subtask_judge", needs_judgement=True)
def _subtask_judge(cfg: BirdConfig, state: SearchState, cand: Candidate, res: TrainResult | None) -> tuple[str, dict]:
    """Per subtask: the mean judge score and every judgement's behaviour and rationale; the overall judge score; the
    reward components per step over the judged rollouts; the task score only when feedback.show_score."""
    judgement = state.judgements.get(cand.id)
    if res is None or judgement is None:
        return "The reward was not used to train a policy.", {}
    lines = [f"The policy trained with this reward was judged on {cfg.judge.rollouts} rollout(s), {cfg.judge.repeats} "
             f"judgement(s) each ({judgement['scale']} scale, normalised to [0, 1]):"]
    subtasks = []
    for i, row in enumerate(judgement["subtasks"], start=1):
        lines.append(f"{i}. {row['name']}: {_fmt(row['score'])}")
        lines += [f"   - rollout {j['rollout']}, judgement {j['repeat']}: score {j['raw']}. Behaviour: {j['behaviour']} "
                  f"Rationale: {j['rationale']}" for j in row["judgements"]]
        subtasks.append({"name": row["name"], "score": row["score"],
                         "judgements": [{k: j[k] for k in ("rollout", "repeat", "raw", "behaviour", "rationale")}
                                        for j in row["judgements"]]})
    lines.append(f"Judge score (mean over subtasks): {_fmt(judgement['score'])}")
    stats: dict[str, Any] = {"judge_score": judgement["score"], "subtasks": subtasks}
    if res.rollouts_path:
        data = load_rollouts(res.rollouts_path)
        keep = data["episode"] < cfg.judge.rollouts
        comps = component_stats({k: v[keep] for k, v in data.items() if k == "reward" or k.startswith("comp/")})
        stats["component_stats"] = comps
        lines.append("Reward components per step over the judged rollouts (max / mean / min / std):")
        lines += [f"- {n}: {s['max']:.3f} / {s['mean']:.3f} / {s['min']:.3f} / {s['std']:.3f}" for n, s in comps.items()]
    if cfg.feedback.show_score and res.curve:
        stats["task_score"] = shown_scores(cfg.feedback.score_shown, state.spec.suite, res.curve)
        lines.append("task_score at each checkpoint: " + ", ".join(f"{v:.2f}" for v in stats["task_score"]))
    return "\n".join(lines), stats
