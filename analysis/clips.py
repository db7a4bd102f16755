"""One clip per method × task for the leaderboard: the returned policy of the run with the median returned score."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from bird.files import read_json

from .artefacts import inside

__all__ = ["pick_clips", "why_no_clips"]


def _first_clip(run_dir: str) -> dict | None:
    """The run's first recorded final-retrain clip (result.json `videos`), or None."""
    try:
        videos = read_json(Path(run_dir) / "result.json", "result", Path(run_dir)).get("videos") or {}
        clips = videos.get("clips") or []
    except (OSError, ValueError, AttributeError):  # unreadable, or not the shape bird writes
        return None
    for clip in clips if isinstance(clips, list) else []:
        video = clip.get("video") if isinstance(clip, dict) else None
        path = Path(run_dir) / str(video)
        if isinstance(video, str) and video and path.is_file() and not path.is_symlink() \
                and inside(Path(run_dir), path):
            score = clip.get("score")
            score = float(score) if isinstance(score, int | float) and not isinstance(score, bool) \
                and abs(score) < 1e15 else None
            return {"score": score, "description": str(clip.get("description") or "")[:500], "path": str(path)}
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


def _present(run_dir: Path, name: str) -> bool:
    clip = run_dir / name
    return clip.is_file() and not clip.is_symlink() and inside(run_dir, clip)


def why_no_clips(runs: pd.DataFrame) -> str:
    """Why no run gives a clip, from each run's result.json `videos`: clips listed but not in the run directory
    (a bundle holds media only when packed with --with-media), runs that recorded none, and recorded problems."""
    missing = off = 0
    problems: set[str] = set()
    for run_dir in runs.get("run_dir", []):
        try:  # a received run: any field may have any shape
            videos = read_json(Path(run_dir) / "result.json", "result", Path(run_dir)).get("videos") or {}
            clips = [c for c in videos.get("clips") or [] if isinstance(c, dict)]
            off += videos.get("record") == "none"
            missing += sum(1 for c in clips if not _present(Path(run_dir), str(c.get("video", ""))))
            problems.update(str(p)[:200] for p in list(videos.get("problems") or [])[:10])
        except (OSError, ValueError, AttributeError, TypeError):
            continue
    parts = [f"{missing} clip(s) the runs list are not in their directories (a bundle holds clips only when packed "
             "with --with-media)"] * bool(missing)
    parts += [f"{off} run(s) recorded none (video.record=none)"] * bool(off)
    parts += sorted(problems)[:3]
    return "; ".join(parts) or "the runs list none"

