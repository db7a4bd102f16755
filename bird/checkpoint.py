"""Crash-safe resume: the search state is checkpointed atomically after set-up and after each iteration.

A resumed search restores the state (population, trajectory store, demos, dialogue history, results, RNG
state, LLM accounting) and rewinds the run directory to the checkpoint: the in-flight iteration's candidate
folders are removed, per-iteration logs are cut back, and LLM calls made after the checkpoint are moved to
`lost_llm_calls.jsonl` (they were paid for; the redone iteration asks again, from the response cache when on).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import pickle
import random
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bird.config.load import ConfigError, config_hash
from bird.config.schema import BirdConfig
from bird.state import SearchState

__all__ = ["CHECKPOINT_NAME", "CheckpointError", "SavedSearch", "save", "load", "restore_rng", "rewind", "remove"]

CHECKPOINT_NAME = "checkpoint.pkl"
_FORMAT = 1
# append-only files whose lines after the checkpoint belong to the in-flight iteration
_CUT_FILES = ("screens.jsonl", "population.jsonl", "islands.jsonl", "subtasks.jsonl")
_JOURNAL = "llm_calls.jsonl"
_LOST_JOURNAL = "lost_llm_calls.jsonl"
_TRACKED = (*_CUT_FILES, _JOURNAL)


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be read (corrupt, or written by another version of bird)."""


@dataclass
class SavedSearch:
    """What a checkpoint holds: enough to continue after `state.iteration` without redoing it."""

    config_hash: str
    state: SearchState
    ledger: dict[str, Any]  # the LLM journal's running totals (calls, tokens, cost)
    sizes: dict[str, int]  # byte sizes of the append-only logs at the checkpoint
    rng: dict[str, Any]  # Python and NumPy global generator states
    wall_s: float  # search time spent before the checkpoint (all sessions)
    resumes: list[dict[str, Any]] = field(default_factory=list)
    format: int = _FORMAT


def _write_atomic(path: Path, data: bytes) -> None:
    """Temp file in the same folder, fsync, rename, fsync the folder: the old or the new file, never half."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def save(root: Path, cfg: BirdConfig, state: SearchState, ledger: dict[str, Any], wall_s: float,
         resumes: list[dict[str, Any]]) -> None:
    """Checkpoint the state after `state.iteration` (0 = after set-up). The judge is rebuilt on resume."""
    judge, state.judge = state.judge, None
    try:
        saved = SavedSearch(config_hash(cfg), state, dict(ledger), {n: _size(root / n) for n in _TRACKED},
                            {"python": random.getstate(), "numpy": np.random.get_state()}, wall_s, list(resumes))
        data = pickle.dumps(saved, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        state.judge = judge
    _write_atomic(root / CHECKPOINT_NAME, data)


def load(root: Path, cfg: BirdConfig) -> SavedSearch | None:
    """The checkpoint in `root` (None when there is none); `restore_rng` puts its RNG states back.

    Raises ConfigError when it belongs to another config, CheckpointError when it cannot be read.
    """
    path = root / CHECKPOINT_NAME
    if not path.exists():
        return None
    try:
        saved = pickle.loads(path.read_bytes())
    except Exception as exc:  # noqa: BLE001 - any unpickling problem means the same thing to the user
        raise CheckpointError(f"{path} cannot be read ({type(exc).__name__}: {exc}); delete it or set "
                              f"run.resume=false to start the search over") from None
    if not isinstance(saved, SavedSearch) or saved.format != _FORMAT:
        raise CheckpointError(f"{path} is not a bird checkpoint of format {_FORMAT}; delete it or set "
                              f"run.resume=false to start the search over")
    if saved.config_hash != config_hash(cfg):
        raise ConfigError(f"{root} holds a checkpoint of another config (hash {saved.config_hash} != "
                          f"{config_hash(cfg)}); resume with the same overrides (or `python -m bird.resume "
                          f"{root}`), or set run.resume=false to start over")
    return saved


def restore_rng(saved: SavedSearch) -> None:
    """Set the global Python and NumPy generators to their states at the checkpoint."""
    random.setstate(saved.rng["python"])
    np.random.set_state(saved.rng["numpy"])


_CAND = re.compile(r"^it(\d+)-")


def _move_tail(root: Path, size: int) -> tuple[int, float]:
    """Move journal lines written after the checkpoint to the lost-calls journal; (calls, cost) moved."""
    path = root / _JOURNAL
    if _size(path) <= size:
        return 0, 0.0
    with open(path, "rb+") as fh:
        fh.seek(size)
        tail = fh.read()
        fh.truncate(size)
    lines = [ln for ln in tail.decode(errors="replace").splitlines() if ln.strip()]
    entries = []
    for ln in lines:
        try:
            entries.append(json.loads(ln))
        except ValueError:
            continue  # the line being written when the process died
    with open(root / _LOST_JOURNAL, "a", encoding="utf-8") as fh:
        fh.writelines(json.dumps(e) + "\n" for e in entries)
    return len(entries), float(sum(e.get("cost_usd") or 0.0 for e in entries))


def _drop_partial_line(path: Path) -> None:
    """Cut a last line left half-written by a killed process (no trailing newline)."""
    if not path.exists() or _size(path) == 0:
        return
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        with open(path, "rb+") as fh:
            fh.truncate(data.rfind(b"\n") + 1)


def rewind(root: Path, saved: SavedSearch) -> dict[str, Any]:
    """Remove what the in-flight iteration (and a final retrain) left; returns the resume record."""
    done = saved.state.iteration
    removed: list[str] = []
    for folder in ("candidates", "expand"):
        for path in sorted((root / folder).glob("it*")) if (root / folder).is_dir() else []:
            match = _CAND.match(path.name + "-")
            if match and int(match.group(1)) > done:
                shutil.rmtree(path)
                removed.append(f"{folder}/{path.name}")
    if (root / "final").is_dir():
        shutil.rmtree(root / "final")
        removed.append("final")
    for name in _CUT_FILES:
        if name not in saved.sizes:  # a checkpoint written before bird cut this file: leave it as it is
            continue
        if _size(root / name) > saved.sizes[name]:
            with open(root / name, "rb+") as fh:
                fh.truncate(saved.sizes[name])
    lost_calls, lost_cost = _move_tail(root, saved.sizes.get(_JOURNAL, 0))
    _drop_partial_line(root / "events.jsonl")
    return {"at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "from_iteration": done,
            "lost_llm_calls": lost_calls, "lost_cost_usd": lost_cost, "removed": removed}


def remove(root: Path) -> None:
    """Delete the checkpoint once the result is written (a finished search is skipped, not resumed)."""
    (root / CHECKPOINT_NAME).unlink(missing_ok=True)
