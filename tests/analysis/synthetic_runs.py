"""SYNTHETIC run directories in the docs/rundir.md layout (schema_version 1), for analysis tests and benches.

These runs are made up: no policy was trained and no LLM was called. Scores come from a seeded generator
with a per-method effect. Every file says so (`"synthetic": true`, generator label "SYNTHETIC fixture").
Tests of the real engine must use real smoke runs instead.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

SYNTHETIC_LABEL = "SYNTHETIC fixture (no training, no LLM): for analysis tests only"
CORRUPTIONS = ("running", "failed", "no_result", "bad_json", "missing_field", "bad_candidate")


def _dump(path: Path, obj: object) -> None:
    path.write_text(json.dumps(obj))


def write_run(root: Path, method: str, suite: str, task: str, seed: int, *, effect: float = 0.0,
              iterations: int = 3, candidates: int = 3, epic: bool = False, minimal: bool = False,
              stamp: str = "2025-01-01T00:00:00", choices: Sequence[str] = ()) -> Path:
    """Write one completed synthetic run at root/<method>/<suite>-<task>/seed<seed>/<stamp>; returns it.

    Scores lie in [0, 1] and improve over iterations; `effect` shifts the method's level. `minimal` writes
    only the files the analysis reads (for large benches). `epic` adds an epic.csv with distances.
    """
    rng = np.random.default_rng(zlib.crc32(f"{method}|{suite}|{task}|{seed}".encode()))
    run = root / "+".join([method, *choices]) / f"{suite}-{task}" / f"seed{seed}" / stamp.replace(":", "")
    (run / "candidates").mkdir(parents=True, exist_ok=True)
    _dump(run / "status.json", {"state": "completed", "started": stamp, "updated": stamp, "pid": 1,
                                "error": None, "synthetic": True})
    base = 1 / (1 + math.exp(-(effect + rng.normal(0, 0.5))))
    its, env_steps, best = [], 0, (-1.0, None, None)
    for it in range(1, iterations + 1):
        rows = []
        for c in range(candidates):
            cid = f"it{it}-c{c}"
            failed = rng.random() < 0.15
            score = None if failed else round(float(np.clip(base * (0.6 + 0.15 * it) + rng.normal(0, 0.08),
                                                            0, 1)), 3)
            env_steps += 20000
            cand = {"id": cid, "iteration": it, "index": c, "parent_id": None if it == 1 else best[1],
                    "status": "failed" if failed else "trained",
                    "failure": {"kind": "runtime_error", "reason": "synthetic", "detail": ""} if failed else None,
                    "fitness": score, "score": score, "final_score": score, "env_steps": 20000, "wall_s": 1.0,
                    "llm": {"model": "synthetic", "input_tokens": 100, "output_tokens": 50, "cost_usd": 0.0,
                            "cached": False, "latency_s": 0.0}}
            (run / "candidates" / cid).mkdir(exist_ok=True)
            _dump(run / "candidates" / cid / "candidate.json", cand)
            if not minimal:
                (run / "candidates" / cid / "reward.py").write_text("# synthetic\n")
                (run / "candidates" / cid / "curve.csv").write_text(
                    f"env_steps,score\n10000,{(score or 0) / 2}\n20000,{score or 0}\n")
            rows.append(cand)
            if score is not None and score > best[0]:
                best = (score, cid, score)
        ok = [r for r in rows if r["score"] is not None]
        top = max(ok, key=lambda r: r["fitness"]) if ok else None
        its.append({"iteration": it, "best_candidate": top and top["id"],
                    "best_fitness": top and top["fitness"], "best_score": top and top["score"],
                    "returned_so_far": best[1], "n_candidates": candidates, "n_failed": candidates - len(ok),
                    "env_steps_cum": env_steps})
    returned = best[2] if best[1] else 0.0
    final = round(float(np.clip(returned + rng.normal(0, 0.03), 0, 1)), 3)
    result = {"schema_version": 1, "status": "completed", "method": method, "env": f"{suite}/{task}",
              "suite": suite, "task": task, "seed": seed, "budget": "synthetic", "config_hash": "000000000000",
              "choices": list(choices),
              "generator": {"provider": "synthetic", "model": "none", "label": SYNTHETIC_LABEL},
              "synthetic": True, "substitutes": [],
              "returned": {"candidate_id": best[1], "code_path": f"candidates/{best[1]}/reward.py",
                           "in_loop_score": best[2]},
              "returned_score": final, "returned_score_per_seed": [final], "iterations": its,
              "n_candidates": iterations * candidates, "n_failed": sum(i["n_failed"] for i in its),
              "llm_calls": iterations * candidates, "tokens": {"input": 100, "output": 50}, "cost_usd": 0.0,
              "env_steps": env_steps + 20000, "wall_s": 1.0}
    _dump(run / "result.json", result)
    if not minimal:
        (run / "config.yaml").write_text(f"# SYNTHETIC\nmethod: {method}\nseed: {seed}\n")
        _dump(run / "task.json", {"env_id": f"{suite}/{task}", "suite": suite, "task": task, "synthetic": True})
        (run / "events.jsonl").write_text('{"t": 0, "event": "search_started"}\n{"t": 1, "event": "search_done"}\n')
    if epic:
        lines = ["iteration,candidate,distance,random_median"]
        for i in its:
            d = float(np.clip(0.65 - 0.08 * i["iteration"] - 0.1 * effect + rng.normal(0, 0.03), 0, 1))
            lines.append(f"{i['iteration']},{i['best_candidate'] or ''},{d:.4f},0.70")
        (run / "epic.csv").write_text("\n".join(lines) + "\n")
    return run


def write_sweep(root: Path, methods: dict[str, float], tasks: Sequence[tuple[str, str]], seeds: Sequence[int],
                **kwargs: object) -> list[Path]:
    """A synthetic sweep: every method x (suite, task) x seed. `methods` maps method -> effect."""
    return [write_run(root, m, s, t, k, effect=e, **kwargs)  # type: ignore[arg-type]
            for m, e in methods.items() for s, t in tasks for k in seeds]


def corrupt(run: Path, kind: str) -> Path:
    """Turn a written run into a broken one: running, failed, no_result, bad_json, missing_field, bad_candidate."""
    if kind not in CORRUPTIONS:
        raise ValueError(f"kind={kind!r}; expected one of {CORRUPTIONS}")
    status = json.loads((run / "status.json").read_text())
    if kind in ("running", "failed"):
        _dump(run / "status.json", {**status, "state": kind})
        if kind == "running":
            (run / "result.json").unlink()
    elif kind == "no_result":
        (run / "result.json").unlink()
    elif kind == "bad_json":
        (run / "result.json").write_text('{"schema_version": 1, "status": "compl')
    elif kind == "missing_field":
        result = json.loads((run / "result.json").read_text())
        del result["returned_score"]
        _dump(run / "result.json", result)
    else:
        first = sorted((run / "candidates").iterdir())[0]
        (first / "candidate.json").write_text("not json")
    return run


def pattern_clip(path: Path, text: str, frames: int = 24, size: tuple[int, int] = (160, 240)) -> Path:
    """A real H.264 MP4 (bird's own video writer) of a SYNTHETIC test pattern captioned `text`: a bar sweeping
    across a gradient. Stands in for a filmed policy where a test needs a playable clip but no simulator."""
    from bird.envs.frames import caption_frames, write_video

    h, w = size
    base = np.zeros((h, w, 3), dtype=np.uint8)
    base[..., 2] = np.linspace(60, 200, w, dtype=np.uint8)[None, :]
    base[..., 1] = np.linspace(40, 120, h, dtype=np.uint8)[:, None]
    shots = []
    for k in range(frames):
        frame = base.copy()
        x = k * (w - 16) // max(frames - 1, 1)
        frame[h // 3:, x:x + 16] = (240, 200, 40)
        shots.append(frame)
    return write_video(caption_frames(shots, text), path, fps=12)


def add_clip(run: Path, clip: Path, score: float | None = None) -> Path:
    """Give a written run a final-retrain clip (a copy of `clip`), listed in result.json `videos` as the engine does."""
    import shutil

    (run / "final").mkdir(exist_ok=True)
    shutil.copy2(clip, run / "final" / "episode0.mp4")
    result = json.loads((run / "result.json").read_text())
    result["videos"] = {"clips": [{"video": "final/episode0.mp4", "score": score,
                                   "description": f"SYNTHETIC test pattern ({result['method']})"}]}
    _dump(run / "result.json", result)
    return run
