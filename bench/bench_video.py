"""What recording the returned policy costs: whole smoke searches with video.record=none vs returned, side by side,
interleaved, same seed; plus the per-clip render time from the clips' JSON.

    python bench/bench_video.py [--envs mujoco/hopper metaworld/push] [--repeats 3] [--budget smoke] [--set K=V ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import record

ROOT = Path(__file__).resolve().parents[1]


def run(env: str, mode: str, budget: str, out: Path, extra: list[str]) -> tuple[float, list[dict]]:
    """Wall time of one `python -m bird` search and its clip records."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "bird", f"budget={budget}", f"env={env}", f"video.record={mode}",
                           "run.progress=false", "run.skip_completed=false", f"hydra.run.dir={out}", *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"the {env} search (video.record={mode}) exited {done.returncode}:\n{done.stderr[-3000:]}")
    wall = time.perf_counter() - start
    clips = [json.loads(p.read_text()) for p in sorted(out.glob("final/seed*/episode*.json"))]
    return wall, clips


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--envs", nargs="+", default=["mujoco/hopper", "metaworld/push"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget", default="smoke")
    ap.add_argument("--set", nargs="*", default=[], help="extra config overrides, e.g. budget.max_iterations=1")
    args = ap.parse_args()
    started = record.begin()
    print("| env | budget | video.record=none (median s) | returned (median s) | ratio | clip: steps, frames, render s |")
    print("|---|---|---|---|---|---|")
    for env in args.envs:
        walls: dict[str, list[float]] = {"none": [], "returned": []}
        clips: list[dict] = []
        with tempfile.TemporaryDirectory() as tmp:
            for k in range(args.repeats):
                for mode in ("none", "returned") if k % 2 == 0 else ("returned", "none"):
                    wall, recs = run(env, mode, args.budget, Path(tmp) / f"{mode}{k}", args.set)
                    walls[mode].append(wall)
                    clips += recs
        off, on = statistics.median(walls["none"]), statistics.median(walls["returned"])
        per_clip = ", ".join(f"{c['steps']} / {c['frames']} / {c['render_s']:.1f}" for c in clips if "render_s" in c)
        print(f"| {env} | {args.budget} | {off:.1f} | {on:.1f} | {on / off:.3f} | {per_clip} |", flush=True)
        rendered = [c for c in clips if "render_s" in c]
        record.append("video", {"env": env, "budget": args.budget, "repeats": args.repeats, "none_s": off,
                                "returned_s": on, "ratio": on / off,
                                "clip_steps": rendered[0]["steps"] if rendered else None,
                                "clip_frames": rendered[0]["frames"] if rendered else None,
                                "render_s": statistics.median(c["render_s"] for c in rendered) if rendered else None},
                      started)


if __name__ == "__main__":
    main()
