"""Files the leaderboard copies next to itself, so the folder can be published alone: one clip per method × task
(clips/) and each run's result.json, config.yaml and returned reward program (runs/)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from bird.files import copy_file

__all__ = ["RUN_FILES", "copy_clips", "copy_run_files", "inside"]

# label on the page -> file in the run directory ("{candidate}": the returned candidate's id)
RUN_FILES = {"result": "result.json", "config": "config.yaml", "reward": "candidates/{candidate}/reward.py"}


def _safe(text: object) -> str:
    """A file-name part: characters other than letters, digits, `.`, `_`, `+`, `-` become `_`."""
    return re.sub(r"[^\w.+-]", "_", str(text))


def inside(run_dir: Path, path: Path) -> bool:
    """True when `path`, links resolved, lies in `run_dir`: a run directory (perhaps from someone else's bundle)
    cannot make the page copy a file from elsewhere on this machine."""
    return path.resolve().is_relative_to(run_dir.resolve())


def copy_clips(clips: pd.DataFrame, out: Path) -> dict[tuple[str, str, str], str]:
    """Copy each clip to out/clips/<benchmark>-<task>-<method>.mp4; returns (benchmark, task, method) -> that path,
    relative to out. No clips: no folder."""
    if clips.empty:
        return {}
    (out / "clips").mkdir(exist_ok=True)
    copied = {}
    for r in clips.itertuples():
        name = f"{r.benchmark}-{r.task}-{r.method}.mp4".replace("/", "_")
        copy_file(Path(r.path), out / "clips" / name, "media", Path(r.path).parent)
        copied[(r.benchmark, r.task, r.method)] = f"clips/{name}"
    return copied


def copy_run_files(runs: pd.DataFrame, out: Path) -> dict[tuple[str, str, str, int], dict[str, str]]:
    """Copy RUN_FILES of every run that has them to out/runs/<method>/<benchmark>-<task>/seed<seed>/.

    Returns (benchmark, task, method, seed) -> {label: path relative to out}; a run whose directory is gone (a
    Parquet export read elsewhere) gets no entry, a missing file no label.
    """
    copied: dict[tuple[str, str, str, int], dict[str, str]] = {}
    for r in runs.itertuples():
        src = Path(str(r.run_dir))
        if not src.is_dir():
            continue
        rel = f"runs/{_safe(r.method)}/{_safe(r.benchmark)}-{_safe(r.task)}/seed{int(r.seed)}"
        files = {}
        candidate = getattr(r, "returned_candidate", None)
        for label, pattern in RUN_FILES.items():
            if "{candidate}" in pattern and not isinstance(candidate, str):
                continue
            path = src / pattern.format(candidate=candidate)
            if not (path.is_file() and inside(src, path)):
                continue
            (out / rel).mkdir(parents=True, exist_ok=True)
            try:
                copy_file(path, out / rel / path.name, "result" if label == "result" else "text", src)
            except OSError:  # a file bird does not copy (a link, too large): the page links nothing for it
                continue
            files[label] = f"{rel}/{path.name}"
        copied[(r.benchmark, r.task, r.method, int(r.seed))] = files
    return copied
