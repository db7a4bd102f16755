"""One clip per method × task for the leaderboard: the returned policy of the run with the median returned score."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from .artefacts import inside

__all__ = ["pick_clips", "why_no_clips"]


def _first_clip(run_dir: str) -> dict | None:
    """The run's first recorded final-retrain clip (result.json `videos`), or None."""
    try:
        videos = (json.loads((Path(run_dir) / "result.json").read_text()).get("videos") or {})
    except (OSError, ValueError):
        return None
    for clip in videos.get("clips") or []:
        path = Path(run_dir) / str(clip.get("video", ""))
        if clip.get("video") and path.is_file() and inside(Path(run_dir), path):
            return {**clip, "path": str(path)}
    return None


def pick_clips(runs: pd.DataFrame) -> pd.DataFrame:
    """Rows (benchmark, task, method, seed, returned_score, n_runs, clip_score, description, path).

    Per method × task, the run whose returned score is the (lower) median of the runs that have a clip: a
    representative policy rather than the best one.
    """
    rows = []
    if runs.empty:
        return pd.DataFrame(rows)
    for (bench, task, method), g in runs.groupby(["benchmark", "task", "method"], sort=True):
        with_clip = [(r, c) for r in g.itertuples() if (c := _first_clip(r.run_dir)) is not None]
        if not with_clip:
            continue
        with_clip.sort(key=lambda rc: (rc[0].returned_score if pd.notna(rc[0].returned_score) else float("-inf"),
                                       rc[0].seed))
        run, clip = with_clip[(len(with_clip) - 1) // 2]
        rows.append({"benchmark": bench, "task": task, "method": method, "seed": int(run.seed),
                     "returned_score": run.returned_score, "n_runs": len(with_clip), "clip_score": clip.get("score"),
                     "description": clip.get("description", ""), "path": clip["path"]})
    return pd.DataFrame(rows)


def why_no_clips(runs: pd.DataFrame) -> str:
    """Why no run gives a clip, from each run's result.json `videos`: clips listed but not in the run directory
    (a bundle holds media only when packed with --with-media), runs that recorded none, and recorded problems."""
    missing = off = 0
    problems: set[str] = set()
    for run_dir in runs.get("run_dir", []):
        try:
            videos = json.loads((Path(run_dir) / "result.json").read_text()).get("videos") or {}
        except (OSError, ValueError):
            continue
        off += videos.get("record") == "none"
        missing += sum(1 for c in videos.get("clips") or [] if not (Path(run_dir) / str(c.get("video", ""))).is_file())
        problems.update(str(p) for p in videos.get("problems") or [])
    parts = [f"{missing} clip(s) the runs list are not in their directories (a bundle holds clips only when packed "
             "with --with-media)"] * bool(missing)
    parts += [f"{off} run(s) recorded none (video.record=none)"] * bool(off)
    parts += sorted(problems)[:3]
    return "; ".join(parts) or "the runs list none"

