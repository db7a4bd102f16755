"""Judge scores per subtask: the fitness `judge_score`, the feedback format `subtask_judge` and the evidence behind
generate.behavioural_analysis.

RDA's judged fitness as BIRD's release runs it (safety-research/bird@54a9ce3:bird/components/evaluation.py,
`fitness_vlm_score`, `_vlm_trajectory_analysis`, `judge_digest`, `_traj_component_table`): one judge call per
(collected rollout × judge.repeats) scores every subtask in order, under a failure-cascade rubric (a failed subtask
fails every later one unless there is clear evidence of later success). The judge reads the task, the subtask list
(SearchState.subtasks, or the whole task as one subtask), the reward code, the rollout's length, keyframes of the
rollout (images with judge.mode=vlm; the same keyframes as state rows with state_text, a labelled substitute), the
candidate's per-step reward COMPONENT values at those keyframes, and a state table when judge.state_table. It never
reads the candidate's total own reward or its return (a judge shown them scores a reward by its own scale), the
benchmark score, the reference reward or a success flag: rollouts.npz holds the episode scores, and nothing here reads
them. Scores are normalised by judge.score_scale to [0, 1] and averaged over calls, then over subtasks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bird.components.demo_views import state_dict
from bird.components.judge import episode_keyframes, save_keyframes
from bird.components.subtasks import render_subtasks
from bird.config.roles import judge_temperature
from bird.config.schema import BirdConfig
from bird.envs.frames import RenderingUnavailable
from bird.envs.registry import make_adapter
from bird.learners.rollouts import load_rollouts
from bird.llm.base import LLMError, Message, Request
from bird.llm.parsing import AnswerParseError, parse_json_answer
from bird.prompts import templates
from bird.registry import get, register
from bird.state import SearchState
from bird.types import Candidate, TrainResult

__all__ = ["ScoreScale", "judge_candidate", "subtasks_of", "render_rollout", "STATE_TEXT_JUDGE", "JUDGE_WITHHELD"]

STATE_TEXT_JUDGE = ("judge scores: an LLM reads the states at the rollout's keyframes as text (judge.mode=state_text) "
                    "instead of a VLM viewing the frames")

# rollouts.npz keys the judge never reads: the candidate's total own reward per step (its sum is the return), the
# reference reward, the benchmark score and quantity (safety-research/bird@54a9ce3:bird/components/evaluation.py,
# `judge_digest`: withheld so that a reward cannot win by inflating its own scale)
JUDGE_WITHHELD = ("reward", "ref", "score", "quantity")

SYSTEM = ("You are an expert in robotics and reinforcement learning. You judge how well a policy, trained with a "
          "candidate reward function, achieves each subtask of a task, from evidence of one of its rollouts: what it "
          "looks like and the values of the reward's components. Answer with one JSON object.")
USER = ("Task: {task}\n\nSubtasks, in order:\n{subtasks}\n\nThe reward function the policy was trained with:\n"
        "```python\n{code}```\n\n{evidence}\n\n{components}\n\n"
        "Judge each subtask on its own and in order.\n"
        "- Score: {scale}.\n"
        "- Failure cascade: when a subtask fails, every later subtask counts as failed (the lowest score) unless the "
        "rollout or the reward values give clear evidence that it succeeded anyway.\n"
        "- Back every score with evidence from the rollout and from the reward component values.\n"
        "For every subtask, in order: first describe its behaviour (what the agent does during this subtask; say so "
        "when the behaviour looks unnatural or unintended), then judge it: the score and a short rationale that cites "
        "component values at named steps and says why they justify the score. When the agent did poorly or "
        "unstably, name what in the reward may cause it, e.g. a gated or missing reward signal, one component "
        "overshadowing the others, or component values that are too small or saturated.\n"
        'Answer as JSON: {{"subtasks": [{{"name": str, "behaviour": str, "rationale": str, "score": number}}]}}')


@dataclass(frozen=True)
class ScoreScale:
    """How a judge scores one subtask (registry family score_scale) and how that becomes a number in [0, 1]."""

    name: str
    instruction: str
    top: float  # the best score on this scale
    levels: tuple[float, ...] = ()  # the only values allowed (empty: any value in [0, top])

    def normalise(self, value: Any) -> float | None:
        """value / top, or None when the value is not on the scale."""
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            return None
        if not 0 <= value <= self.top or (self.levels and float(value) not in self.levels):
            return None
        return float(value) / self.top


register("score_scale", "unit")(ScoreScale("unit", "a number from 0 (not achieved at all) to 1 (fully achieved)", 1.0))
# RDA's three-point rubric, 1.0 = success, 0.5 = partial success, 0.0 = failure (safety-research/bird@54a9ce3:
# bird/components/evaluation.py, `_score_rubric`; configs/methods/rda.yaml evaluate.feedback.score_scale three_point)
register("score_scale", "three_point")(ScoreScale("three_point", "1 (success), 0.5 (partial success) or 0 (failure)",
                                                  1.0, (0.0, 0.5, 1.0)))


def subtasks_of(state: SearchState) -> list[dict[str, str]]:
    """The subtasks a judge scores: the current list, or the whole task as one subtask."""
    if state.subtasks:
        return state.subtasks
    return [{"name": "task", "description": state.spec.description}]


def _episode_rows(state: SearchState, data: dict[str, np.ndarray], ep: int, every: int | None,
                  count: int | None) -> list[dict[str, Any]]:
    """States of one episode: every `every` steps, or `count` evenly spaced keyframes (first and last included)."""
    idx = np.flatnonzero(data["episode"] == ep)
    if count is not None:
        keep = sorted({int(round(k * (len(idx) - 1) / max(count - 1, 1))) for k in range(count)})
    else:
        keep = [k for k in range(len(idx)) if k % (every or 1) == 0 or k == len(idx) - 1]
    return [{"step": k + 1, "state": state_dict(state.spec, data["next_obs"][idx[k]])} for k in keep]


def render_rollout(rows: list[dict[str, Any]]) -> str:
    return "\n".join(f"  step {r['step']}: " + ", ".join(f"{k}={v}" for k, v in r["state"].items()) for r in rows)


def _keyframe_images(cfg: BirdConfig, state: SearchState, data: dict[str, np.ndarray], ep: int,
                     folder: Path) -> tuple[list[bytes], list[int]]:
    """PNG keyframes of episode `ep` and the step each shows (judge.episode_keyframes), saved as
    folder/keyframes/<k>_rollout<ep>_step<t>.png (what the VLM was shown)."""
    keyframes = episode_keyframes(make_adapter(cfg.env), cfg, state, data, ep)
    save_keyframes(folder / "keyframes", keyframes, first=ep * cfg.feedback.judge_keyframes)
    return [png for _, _, png in keyframes], [step for _, step, _ in keyframes]


def component_rows(data: dict[str, np.ndarray], ep: int, steps: list[int]) -> list[dict[str, Any]]:
    """The candidate's reward component values of episode `ep` at `steps` (step t: the t-th transition, 1-based;
    step 0 has none): components only, never a key of JUDGE_WITHHELD."""
    idx = np.flatnonzero(data["episode"] == ep)
    names = sorted(k for k in data if k.startswith("comp/") and k[5:] not in JUDGE_WITHHELD)
    return [{"step": t, **{n.removeprefix("comp/"): round(float(data[n][idx[t - 1]]), 4) for n in names}}
            for t in steps if 1 <= t <= len(idx)]


def _render_components(rows: list[dict[str, Any]]) -> str:
    if not rows or len(rows[0]) == 1:
        return "The reward function's components were not recorded for this rollout."
    return "The reward function's components at those steps:\n" + "\n".join(
        f"  step {r['step']}: " + ", ".join(f"{k}={v}" for k, v in r.items() if k != "step") for r in rows)


def _evidence(cfg: BirdConfig, state: SearchState, data: dict[str, np.ndarray], ep: int,
              folder: Path) -> tuple[str, dict, list]:
    """(text, context, images) of one rollout's evidence; a VLM's images are also saved under folder/keyframes/."""
    length = int(np.sum(data["episode"] == ep))
    ctx: dict[str, Any] = {"length": length}
    images: list[bytes] = []
    if cfg.judge.mode == "vlm":
        try:
            images, steps = _keyframe_images(cfg, state, data, ep, folder)
        except RenderingUnavailable as exc:
            ctx["fallback"] = f"vlm requested, rendering unavailable: {exc}"
            label = f"judge=vlm fell back to state_text ({ctx['fallback']})"
            state.substitutes += [] if label in state.substitutes else [label]
    if images:
        lines = [f"The rollout lasted {length} steps. {len(images)} keyframes of it are attached, in time order, at "
                 f"steps {', '.join(map(str, steps))}."]
        ctx["judge_mode"], ctx["n_frames"] = "vlm", len(images)
    else:
        if STATE_TEXT_JUDGE not in state.substitutes:
            state.substitutes.append(STATE_TEXT_JUDGE)
        rows = _episode_rows(state, data, ep, None, cfg.feedback.judge_keyframes)
        steps = [r["step"] for r in rows]
        lines = [f"The rollout lasted {length} steps. The state at {len(rows)} keyframes:", render_rollout(rows)]
        ctx["judge_mode"], ctx["keyframes"] = "state_text", rows
    if cfg.judge.state_table:
        table = _episode_rows(state, data, ep, cfg.feedback.trajectory_stride, None)
        lines += [f"State table, every {cfg.feedback.trajectory_stride} steps:", render_rollout(table)]
        ctx["state_table"] = table
    ctx["components"] = component_rows(data, ep, steps)
    return "\n".join(lines), ctx, images


def _request(cfg: BirdConfig, state: SearchState, cand: Candidate, ep: int, repeat: int,
             subtasks: list[dict[str, str]], scale: ScoreScale, shown: tuple[str, dict, list]) -> Request:
    t = templates(cfg.generate.prompt)
    evidence, ctx, images = shown
    listing = render_subtasks(subtasks)
    user = t.get("score_user", USER).format(task=state.spec.description, subtasks=listing, code=cand.code,
                                            evidence=evidence, components=_render_components(ctx["components"]),
                                            scale=scale.instruction)
    return Request(purpose="judge_score",
                   messages=(Message("system", t.get("score_system", SYSTEM).strip()), Message("user", user, tuple(images))),
                   context={"task": state.spec.description, "subtasks": subtasks, "scale": scale.name, "code": cand.code,
                            "rollout": ctx},
                   temperature=judge_temperature(cfg),
                   max_tokens=cfg.generate.max_tokens, sample_index=100 * ep + repeat, seed=state.seed)


def _parse(text: str, subtasks: list[dict[str, str]], scale: ScoreScale) -> tuple[list[dict] | None, str | None]:
    """Per subtask {score (normalised), raw, behaviour, rationale} from an answer, or (None, why)."""
    try:
        items = parse_json_answer(text).get("subtasks")
    except AnswerParseError as exc:
        return None, str(exc)
    if not isinstance(items, list) or len(items) != len(subtasks):
        return None, f"expected a list of {len(subtasks)} subtask judgements"
    out = []
    for i, item in enumerate(items):
        score = scale.normalise(item.get("score")) if isinstance(item, dict) else None
        if score is None:
            return None, f"subtask {i + 1}: score {item.get('score') if isinstance(item, dict) else item!r} is not on the {scale.name} scale"
        out.append({"score": score, "raw": item["score"], "behaviour": str(item.get("behaviour", "")),
                    "rationale": str(item.get("rationale", ""))})
    return out, None


def judge_candidate(cfg: BirdConfig, state: SearchState, cand: Candidate, res: TrainResult) -> dict[str, Any]:
    """Judge every collected rollout judge.repeats times; returns (and keeps in state.judgements) the judgement:
    score (mean over subtasks of the mean over valid calls; None when no call gave a valid answer), per subtask the
    normalised mean and each call's score, behaviour and rationale, and every call's prompt and answer."""
    scale = get("score_scale", cfg.judge.score_scale)
    subtasks = subtasks_of(state)
    if not res.rollouts_path:
        return {"score": None, "error": "no rollouts were collected", "subtasks": [], "calls": []}
    data = load_rollouts(res.rollouts_path)
    episodes = range(min(cfg.judge.rollouts, len(data["length"])))
    shown = {ep: _evidence(cfg, state, data, ep, Path(res.rollouts_path).parent) for ep in episodes}  # once per rollout
    requests = [_request(cfg, state, cand, ep, r, subtasks, scale, shown[ep])
                for ep in episodes for r in range(cfg.judge.repeats)]
    answers = state.judge.complete_many(requests)
    per_sub: list[list[dict[str, Any]]] = [[] for _ in subtasks]
    calls = []
    for req, answer in zip(requests, answers, strict=True):
        ep, repeat = divmod(req.sample_index, 100)
        parsed, error = (None, f"judge request failed: {answer}") if isinstance(answer, LLMError) else _parse(answer.text, subtasks, scale)
        calls.append({"rollout": ep + 1, "repeat": repeat + 1, "error": error, "prompt": req.messages_json(),
                      "response": None if isinstance(answer, LLMError) else answer.text,
                      "judge_mode": req.context["rollout"]["judge_mode"]})
        for k, item in enumerate(parsed or []):
            per_sub[k].append({"rollout": ep + 1, "repeat": repeat + 1, **item})
    rows = [{"name": s["name"], "score": float(np.mean([j["score"] for j in js])) if js else None, "judgements": js}
            for s, js in zip(subtasks, per_sub, strict=True)]
    valid = [r["score"] for r in rows if r["score"] is not None]
    out = {"score": float(np.mean(valid)) if len(valid) == len(rows) else None, "scale": scale.name,
           "subtasks": rows, "n_calls": len(calls), "n_valid": sum(c["error"] is None for c in calls),
           "judge": state.judge.describe(), "calls": calls}
    state.judgements[cand.id] = out
    state.records.setdefault(cand.id, {})["judge_scores.json"] = out
    return out
