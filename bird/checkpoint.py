"""Crash-safe resume: the search state is checkpointed atomically after set-up and after each iteration.

The checkpoint is JSON written by bird.state_codec: data only, so resuming a directory someone else wrote cannot run
their code. A `checkpoint.pkl` of an earlier bird is refused; `convert_pickle` turns one the user trusts (their own)
into the JSON checkpoint (`python -m bird.resume DIR --trust-pickles`).

A resumed search restores the state (population, trajectory store, demos, dialogue history, results, RNG
state, LLM accounting) and rewinds the run directory to the checkpoint: the in-flight iteration's candidate
folders are removed, per-iteration logs are cut back, and LLM calls made after the checkpoint are moved to
`lost_llm_calls.jsonl` (they were paid for; the redone iteration asks again, from the response cache when on).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bird.config.load import ConfigError, config_hash
from bird.config.schema import BirdConfig
from bird.files import LIMITS, append_text, loads, open_in_place, read_bytes, write_bytes
from bird.state import SearchState
from bird.state_codec import CodecError, decode, encode, register_saved

__all__ = ["CHECKPOINT_NAME", "PICKLE_NAME", "CheckpointError", "SavedSearch", "save", "load", "convert_pickle",
           "restore_rng", "rewind", "remove"]

CHECKPOINT_NAME = "search_state.json"
PICKLE_NAME = "checkpoint.pkl"  # what bird wrote before its checkpoints were JSON: never loaded unless trusted
_FORMAT = 2
# append-only files whose lines after the checkpoint belong to the in-flight iteration
_CUT_FILES = ("screens.jsonl", "population.jsonl", "islands.jsonl", "subtasks.jsonl")
_JOURNAL = "llm_calls.jsonl"
_LOST_JOURNAL = "lost_llm_calls.jsonl"
_TRACKED = (*_CUT_FILES, _JOURNAL)


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be read (corrupt, or written by another version of bird)."""


@register_saved
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


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def save(root: Path, cfg: BirdConfig, state: SearchState, ledger: dict[str, Any], wall_s: float,
         resumes: list[dict[str, Any]]) -> None:
    """Checkpoint the state after `state.iteration` (0 = after set-up). The judge is rebuilt on resume."""
    judge, state.judge = state.judge, None
    try:
        saved = SavedSearch(config_hash(cfg), state, dict(ledger), {n: _size(root / n) for n in _TRACKED},
                            {"python": random.getstate(), "numpy": np.random.get_state()}, wall_s, list(resumes))
        data = _dumps(saved)
    finally:
        state.judge = judge
    write_bytes(root / CHECKPOINT_NAME, data, durable=True)  # the old or the new checkpoint after a crash


def _dumps(saved: SavedSearch) -> bytes:
    head = {"bird_checkpoint": _FORMAT, "config_hash": saved.config_hash, "iteration": saved.state.iteration}
    return json.dumps({**head, "saved": encode(saved)}, separators=(",", ":")).encode()


def load(root: Path, cfg: BirdConfig) -> SavedSearch | None:
    """The checkpoint in `root` (None when there is none); `restore_rng` puts its RNG states back.

    Raises ConfigError when it belongs to another config, CheckpointError when it cannot be read or is an earlier
    bird's pickle (`convert_pickle`).
    """
    path = root / CHECKPOINT_NAME
    if not path.exists():
        if (root / PICKLE_NAME).exists():
            raise CheckpointError(_pickle_refused(root))
        return None
    doc = _read(path)
    if doc.get("config_hash") != config_hash(cfg):
        raise ConfigError(f"{root} holds a checkpoint of another config (hash {doc.get('config_hash')} != "
                          f"{config_hash(cfg)}); resume with the same overrides (or `python -m bird.resume "
                          f"{root}`), or set run.resume=false to start over")
    try:
        saved = decode(doc.get("saved"))
    except (CodecError, RecursionError) as exc:
        raise CheckpointError(f"{path} is not a bird checkpoint ({exc}); delete it or set run.resume=false to "
                              f"start the search over") from None
    if not isinstance(saved, SavedSearch) or not isinstance(saved.state, SearchState):
        raise CheckpointError(f"{path} does not hold a saved search; delete it or set run.resume=false to start "
                              f"the search over")
    return saved


def _read(path: Path) -> dict[str, Any]:
    """The checkpoint document's JSON (a regular file within its cap, bounded parsing: bird/files.py), with its
    format checked."""
    try:
        doc = loads(read_bytes(path, "checkpoint"), max_string=LIMITS["checkpoint"])  # arrays are long strings
    except (OSError, ValueError) as exc:
        raise CheckpointError(f"{path} cannot be read ({type(exc).__name__}: {exc}); delete it or set "
                              f"run.resume=false to start the search over") from None
    if not isinstance(doc, dict) or doc.get("bird_checkpoint") != _FORMAT:
        raise CheckpointError(f"{path} is not a bird checkpoint of format {_FORMAT}; delete it or set "
                              f"run.resume=false to start the search over")
    return doc


def _pickle_refused(root: Path) -> str:
    return (f"{root / PICKLE_NAME} is a checkpoint written by an earlier bird as a pickle, and loading a pickle runs "
            f"whatever code its writer put in it; bird loads none. If you wrote this run directory yourself, convert "
            f"it once with `python -m bird.resume {root} --trust-pickles`; otherwise set run.resume=false to start "
            f"the search over (or delete the file)")


def convert_pickle(root: Path) -> bool:
    """Turn an earlier bird's `checkpoint.pkl` into the JSON checkpoint, and delete the pickle; False when there is
    none. Only for a directory whose pickle the user trusts: unpickling runs code its writer chose."""
    path = root / PICKLE_NAME
    if not path.is_file() or path.is_symlink():
        return False
    import pickle

    try:
        saved = pickle.loads(read_bytes(path, "checkpoint"))  # noqa: S301 - the user vouched for it (--trust-pickles)
    except Exception as exc:  # noqa: BLE001 - any unpickling problem means the same thing to the user
        raise CheckpointError(f"{path} cannot be read ({type(exc).__name__}: {exc}); delete it or set "
                              f"run.resume=false to start the search over") from None
    if not isinstance(saved, SavedSearch) or getattr(saved, "format", None) != 1:
        raise CheckpointError(f"{path} is not a bird checkpoint of format 1; delete it or set run.resume=false to "
                              f"start the search over")
    saved.format = _FORMAT
    try:
        data = _dumps(saved)
    except CodecError as exc:
        raise CheckpointError(f"{path} holds state this bird cannot save ({exc})") from None
    write_bytes(root / CHECKPOINT_NAME, data, durable=True)
    path.unlink()
    return True


def restore_rng(saved: SavedSearch) -> None:
    """Set the global Python and NumPy generators to their states at the checkpoint."""
    random.setstate(saved.rng["python"])
    np.random.set_state(saved.rng["numpy"])


_CAND = re.compile(r"^it(\d+)-")


def _cut(path: Path, size: int | None = None) -> bytes:
    """Truncate the append-only log `path` to `size` bytes (None: after its last whole line) and return what was cut;
    the log is opened as bird/files.py opens a file changed in place (never through a link, regular files only)."""
    with os.fdopen(open_in_place(path, os.O_RDWR), "rb+") as fh:
        data = fh.read() if size is None else b""
        size = data.rfind(b"\n") + 1 if size is None else size
        fh.seek(size)
        tail = fh.read()
        fh.truncate(size)
    return tail


def _move_tail(root: Path, size: int) -> tuple[int, float]:
    """Move journal lines written after the checkpoint to the lost-calls journal; (calls, cost) moved."""
    path = root / _JOURNAL
    if _size(path) <= size:
        return 0, 0.0
    lines = [ln for ln in _cut(path, size).decode(errors="replace").splitlines() if ln.strip()]
    entries = []
    for ln in lines:
        try:
            entry = loads(ln)
        except ValueError:
            continue  # the line being written when the process died
        if isinstance(entry, dict):
            entries.append(entry)
    append_text(root / _LOST_JOURNAL, "".join(json.dumps(e) + "\n" for e in entries))
    costs = [e.get("cost_usd") for e in entries]
    return len(entries), float(sum(c for c in costs if isinstance(c, int | float) and not isinstance(c, bool)))


def _drop_partial_line(path: Path) -> None:
    """Cut a last line left half-written by a killed process (no trailing newline)."""
    if _size(path) > 0:
        _cut(path)


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
            _cut(root / name, saved.sizes[name])
    lost_calls, lost_cost = _move_tail(root, saved.sizes.get(_JOURNAL, 0))
    _drop_partial_line(root / "events.jsonl")
    return {"at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "from_iteration": done,
            "lost_llm_calls": lost_calls, "lost_cost_usd": lost_cost, "removed": removed}


def remove(root: Path) -> None:
    """Delete the checkpoint once the result is written (a finished search is skipped, not resumed)."""
    (root / CHECKPOINT_NAME).unlink(missing_ok=True)
    (root / PICKLE_NAME).unlink(missing_ok=True)
