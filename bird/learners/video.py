"""Clips of a trained policy: its evaluation episodes replayed with rendering, one MP4 + one JSON per episode.

Learners call `film_policy` once, after their last evaluation, when the job carries a VideoSpec; training itself never
renders. Episode k is reset with evaluation seed k, so (deterministic policy, same simulator) it is the evaluation
episode the score was computed on, and its JSON records that episode's own score. No GL: the JSON says why, the
run goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from bird.files import read_json, write_json
from bird.learners.job import EVAL_SEED_BASE, VideoSpec

__all__ = ["film_policy", "read_clips", "summarise_clips"]


def _fps(adapter: Any, frame_skip: int) -> int:
    """Real-time playback: one frame per `frame_skip` control steps of dt seconds (clamped to 1..60)."""
    dt = float(adapter.spec.extra.get("dt") or 0.0)
    return int(min(60, max(1, round(1.0 / (dt * frame_skip))))) if dt > 0 else 30


def film_policy(adapter: Any, act: Callable[[np.ndarray], np.ndarray], spec: VideoSpec, seed: int,
                out_dir: str | Path, evaluation_score: float | None = None) -> list[str]:
    """Film `spec.episodes` evaluation episodes of `act` (obs batch -> actions) into out_dir/episode<k>.mp4/.json.

    Returns the MP4 paths written. Never raises for a rendering problem: it is recorded in the JSON instead.
    """
    from bird.envs.frames import RenderingUnavailable, caption_frames, gl_backend, record_episode, write_video

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fps = _fps(adapter, spec.frame_skip)
    policy = lambda obs: act(obs[None])[0]  # noqa: E731 - one observation, batched
    paths: list[str] = []
    for k in range(spec.episodes):
        episode_seed = EVAL_SEED_BASE + 1000 * seed + k  # the Evaluator's reset seed of episode k
        base = {**spec.meta, "suite": adapter.spec.suite, "task": adapter.spec.task,
                "description": spec.meta.get("description") or adapter.spec.description,
                "score_definition": adapter.spec.score_definition, "training_seed": seed, "episode": k,
                "episode_seed": episode_seed, "evaluation_score": evaluation_score}
        start = time.perf_counter()
        try:
            backend = gl_backend()
            frames, outcome = record_episode(adapter, episode_seed, policy, every=spec.frame_skip,
                                             shadows=spec.shadows, width=spec.width, height=spec.height)
        except RenderingUnavailable as exc:
            write_json(out / f"episode{k}.json", {**base, "status": "unavailable", "reason": str(exc)})
            break  # the next episode would fail the same way
        except Exception as exc:  # noqa: BLE001 - a clip that cannot be made is recorded; the run goes on
            write_json(out / f"episode{k}.json", {**base, "status": "failed", "reason": f"{type(exc).__name__}: {exc}"[:500]})
            continue
        if spec.caption:
            score = "n/a" if outcome["score"] is None else f"{outcome['score']:.3f}"
            frames = caption_frames(frames, f"{base['description']}  |  score {score}")
        path = write_video(frames, out / f"episode{k}.mp4", fps=fps)
        write_json(out / f"episode{k}.json", {
            **base, "status": "recorded", "video": path.name, "score": outcome["score"],
            "quantity": outcome["quantity"], "steps": outcome["steps"], "frames": len(frames), "fps": fps,
            "frame_skip": spec.frame_skip, "width": spec.width, "height": spec.height, "gl_backend": backend,
            "blank": bool(np.ptp(frames[-1]) == 0), "render_s": round(time.perf_counter() - start, 3)})
        paths.append(str(path))
    return paths


def read_clips(folder: str | Path) -> list[dict[str, Any]]:
    """The episode<k>.json records in `folder` (any status), each with `path` = the MP4's absolute path, or None
    when it has none or the MP4 is not a plain file (a link is never taken for a clip)."""
    folder = Path(folder)
    out = []
    for f in sorted(folder.glob("episode*.json")):
        try:
            rec = read_json(f, "record", folder)
        except (OSError, ValueError):
            continue
        if not isinstance(rec, dict):
            continue
        mp4 = f.with_suffix(".mp4")
        plain = mp4.is_file() and not mp4.is_symlink()
        rec["path"] = str(folder.resolve() / mp4.name) if rec.get("status") == "recorded" and plain else None
        out.append(rec)
    return out


def summarise_clips(root: str | Path, record: str) -> dict[str, Any]:
    """result.json's `videos`: the final retrain's clips (paths relative to the run directory) and, when none
    could be made, why."""
    root = Path(root)
    recs = [r for d in sorted((root / "final").glob("seed*")) for r in read_clips(d)]
    clips = [{**{k: r.get(k) for k in ("training_seed", "episode", "episode_seed", "score", "quantity", "steps",
                                       "frames", "fps", "gl_backend", "render_s", "blank", "description")},
              "video": str(Path(r["path"]).relative_to(root.resolve()))} for r in recs if r["path"]]
    problems = sorted({f"{r['status']}: {r.get('reason')}" for r in recs if r.get("status") != "recorded"})
    if record != "none" and not recs:
        problems.append("no final policy was filmed (final.retrain=false, or no returned reward / final training)")
    return {"record": record, "clips": clips, "problems": problems}
