"""The judge feedback format (registry family feedback_format, `judge`): RE-GoT's upper level (§IV-B; the inputs and
the three-part answer are §IV-D, keyframe sampling §V-E). A judge reads every collected rollout of the trained policy,
the reward code and per-component statistics (max/mean/min/std per step), and returns a rollout description, motion
problems and redesign suggestions. Two modes (judge.mode):
- vlm: keyframes of every collected rollout (replayed with rendering) sent as images to an image-capable backend;
- state_text: per-step state summaries instead of images, a labelled substitute ("RE-GoT-S" when run as RE-GoT).
Every verdict names the mode that produced it; a vlm judge without rendering falls back to state_text, labelled."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from bird.components.demo_views import state_dict
from bird.config.roles import judge_temperature
from bird.config.schema import BirdConfig
from bird.envs.frames import RenderingUnavailable, render_episode
from bird.envs.registry import make_adapter
from bird.files import write_bytes
from bird.learners.rollouts import ROLLOUT_SEED_BASE, load_rollouts
from bird.llm.base import LLMError, Message, Request
from bird.llm.parsing import AnswerParseError, parse_json_answer
from bird.prompts import templates
from bird.registry import register
from bird.state import SearchState
from bird.types import Candidate, TrainResult

__all__ = ["STATE_TEXT_SUBSTITUTE", "component_stats"]

STATE_TEXT_SUBSTITUTE = ("judge=state_text: an LLM reads per-step state summaries instead of a VLM watching keyframes "
                         "(RE-GoT §IV-B/§IV-D; report RE-GoT run this way as RE-GoT-S)")
_VERDICT_KEYS = ("rollout_description", "motion_problems", "redesign_suggestions")


def component_stats(data: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """max/mean/min/std per step of the reward and each component over all collected rollout steps."""
    series = {"reward": data["reward"], **{k[5:]: data[k] for k in data if k.startswith("comp/")}}
    return {n: {"max": float(v.max()), "mean": float(v.mean()), "min": float(v.min()), "std": float(v.std())}
            for n, v in series.items()}


def _state_rows(cfg: BirdConfig, state: SearchState, data: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    out = []
    for ep in range(len(data["length"])):  # every collected rollout
        idx = np.flatnonzero(data["episode"] == ep)
        keep = [i for k, i in enumerate(idx) if k % cfg.feedback.trajectory_stride == 0 or k == len(idx) - 1]
        out.append({"episode": ep, "length": int(len(idx)),
                    "rows": [{"step": int(np.flatnonzero(idx == i)[0]) + 1, "state": state_dict(state.spec, data["next_obs"][i])}
                             for i in keep]})
    return out


def episode_keyframes(adapter: Any, cfg: BirdConfig, state: SearchState, data: dict[str, np.ndarray],
                      ep: int) -> list[tuple[int, int, bytes]]:
    """(rollout, step, PNG) keyframes of collected rollout `ep`, feedback.judge_keyframes of them, each showing the
    state after `step` actions: the rollout replayed from its own reset seed with its actions (raises
    RenderingUnavailable)."""
    import imageio.v3 as iio

    actions = data["actions"][data["episode"] == ep]
    every = max(1, len(actions) // max(cfg.feedback.judge_keyframes - 1, 1))
    steps = iter(actions)
    frames = render_episode(adapter, seed=ROLLOUT_SEED_BASE + 1000 * state.seed + ep, policy=lambda obs: next(steps),
                            max_steps=len(actions), every=every, width=224, height=224)
    return [(ep, min(k * every, len(actions)), iio.imwrite("<bytes>", f, extension=".png"))
            for k, f in enumerate(frames[: cfg.feedback.judge_keyframes])]


def _keyframes(cfg: BirdConfig, state: SearchState, data: dict[str, np.ndarray]) -> list[tuple[int, int, bytes]]:
    """Keyframes of every collected rollout (episode_keyframes), rollout by rollout."""
    adapter = make_adapter(cfg.env)
    return [k for ep in range(len(data["length"])) for k in episode_keyframes(adapter, cfg, state, data, ep)]


def save_keyframes(folder: Path, keyframes: list[tuple[int, int, bytes]], first: int = 0) -> None:
    """The judge's images as keyframes/<k>_rollout<r>_step<t>.png in the candidate folder (what the VLM was shown),
    numbered from `first`."""
    folder.mkdir(parents=True, exist_ok=True)
    for k, (rollout, step, png) in enumerate(keyframes, start=first):
        write_bytes(folder / f"{k:02d}_rollout{rollout}_step{step:04d}.png", png)


def _evidence(cfg: BirdConfig, state: SearchState, data: dict[str, np.ndarray],
              folder: Path) -> tuple[str, dict, list[bytes]]:
    mode, fallback = cfg.judge.mode, None
    if mode == "vlm":
        try:
            keyframes = _keyframes(cfg, state, data)
            save_keyframes(folder / "keyframes", keyframes)
            images = [png for _, _, png in keyframes]
            n = len(data["length"])
            return (f"{len(images)} keyframes of the {n} rollout{'s' if n > 1 else ''} are attached, rollout by rollout, "
                    "each in time order.", {"judge_mode": "vlm", "n_frames": len(images), "n_rollouts": n}, images)
        except RenderingUnavailable as exc:
            mode, fallback = "state_text", f"vlm requested, rendering unavailable: {exc}"
            state.substitutes.append(f"judge=vlm fell back to state_text ({fallback})")
    if STATE_TEXT_SUBSTITUTE not in state.substitutes:
        state.substitutes.append(STATE_TEXT_SUBSTITUTE)
    rows = _state_rows(cfg, state, data)
    text = "\n".join(f"Rollout {r['episode'] + 1} ({r['length']} steps), state every {cfg.feedback.trajectory_stride} steps:\n"
                     + "\n".join(f"  step {x['step']}: " + ", ".join(f"{k}={v}" for k, v in x["state"].items())
                                 for x in r["rows"]) for r in rows)
    ctx = {"judge_mode": "state_text", "episodes": rows, **({"fallback": fallback} if fallback else {})}
    return text, ctx, []


def _verdict(text: str) -> tuple[dict[str, Any], str | None]:
    try:
        answer = parse_json_answer(text)
    except AnswerParseError as exc:
        return {}, str(exc)
    verdict = {k: answer.get(k, [] if k != "rollout_description" else "") for k in _VERDICT_KEYS}
    verdict["rollout_description"] = str(answer.get("rollout_description") or answer.get("video_description") or "")
    return verdict, None


def _render(kind: str, verdict: dict[str, Any], error: str | None, stats: dict[str, dict[str, float]]) -> str:
    lines = [f"Judge ({kind}):"]
    if error:
        lines.append(f"(the judge's answer could not be read: {error})")
    else:
        lines.append(f"Rollout description: {verdict['rollout_description']}")
        for title, key in (("Motion problems", "motion_problems"), ("Redesign suggestions", "redesign_suggestions")):
            items = verdict[key] if isinstance(verdict[key], list) else [verdict[key]]
            lines += [f"{title}:"] + ([f"- {x}" for x in items] or ["- (none)"])
    lines.append("Reward components per step over the rollouts:")
    lines += [f"- {n}: max {s['max']:.3f}, mean {s['mean']:.3f}, min {s['min']:.3f}, std {s['std']:.3f}"
              for n, s in stats.items()]
    return "\n".join(lines)


@register("feedback_format", "judge", needs_judge=True, needs={"train.collect_episodes": 1})
def _judge(cfg: BirdConfig, state: SearchState, cand: Candidate, res: TrainResult | None) -> tuple[str, dict]:
    if res is None or not res.rollouts_path:
        return "The reward was not used to train a policy.", {}
    data = load_rollouts(res.rollouts_path)
    stats = component_stats(data)
    evidence, ctx, images = _evidence(cfg, state, data, Path(res.rollouts_path).parent)
    t = templates(cfg.generate.prompt)
    stat_text = "\n".join(f"- {n}: {s['max']:.3f} / {s['mean']:.3f} / {s['min']:.3f} / {s['std']:.3f}" for n, s in stats.items())
    user = t["judge_user"].format(task=state.spec.description, code=cand.code, component_stats=stat_text, evidence=evidence)
    req = Request(purpose="judge", messages=(Message("system", t["judge_system"]), Message("user", user, tuple(images))),
                  context={"task": state.spec.description, "code": cand.code, "component_stats": stats, **ctx},
                  temperature=judge_temperature(cfg),
                  max_tokens=cfg.generate.max_tokens, seed=state.seed)
    [answer] = state.judge.complete_many([req])
    kind = f"{ctx['judge_mode']}:{state.judge.model}"
    if isinstance(answer, LLMError):
        verdict, error, raw = {}, f"judge request failed: {answer}", ""
    else:
        raw = answer.text
        verdict, error = _verdict(raw)
    out = {"judge": kind, "judge_generator": state.judge.describe(), "verdict": verdict, "error": error,
           "response": raw, "prompt": req.messages_json(), "component_stats": stats, "n_frames": len(images),
           "n_rollouts": int(len(data["length"])),
           "components": {n: [s["min"], s["mean"], s["max"]] for n, s in stats.items() if n != "reward"},
           **{k: v for k, v in ctx.items() if k in ("fallback",)}}
    return _render(kind, verdict, error, stats), out
