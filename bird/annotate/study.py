"""The rating study's SQLite store (WAL): clips, raters with link tokens, per-rater schedules, answers.

BIRD §4.4 / Fig. 13 / Tables 2, 12, 13: raters score each clip for task completion and, outside the completion-only
domains, for naturalness, on Likert scales; unannounced repeat showings measure within-rater reliability.
The scale length and the question wording are not in BIRD's text; ours are in QUESTIONS (5 points).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import secrets
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bird.escape import csv_cell

__all__ = ["QUESTIONS", "COMPLETION_ONLY", "AnswerError", "Study", "find_clips", "EXPORT_COLUMNS"]

SCALE = 5
QUESTIONS = {
    "completion": {"text": "How completely does the robot accomplish the task?",
                   "labels": ["Not at all", "Slightly", "Partly", "Mostly", "Completely"]},
    "naturalness": {"text": "How natural does the motion look?",
                    "labels": ["Very unnatural", "Unnatural", "Neutral", "Natural", "Very natural"]},
}
# Domains rated for completion only: BIRD's Gym MuJoCo clips (Table 2, Table 13: "completion-only by design").
COMPLETION_ONLY = ("mujoco",)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS clips (
    id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, run_dir TEXT NOT NULL, suite TEXT NOT NULL, task TEXT NOT NULL,
    description TEXT NOT NULL, method TEXT, search_seed INTEGER, training_seed INTEGER, episode INTEGER,
    episode_seed INTEGER, score REAL, ask_naturalness INTEGER NOT NULL, added TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS raters (
    id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL, token TEXT UNIQUE NOT NULL, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS schedule (
    rater_id INTEGER NOT NULL REFERENCES raters(id), position INTEGER NOT NULL, clip_id INTEGER NOT NULL REFERENCES clips(id),
    is_repeat INTEGER NOT NULL, PRIMARY KEY (rater_id, position));
CREATE TABLE IF NOT EXISTS ratings (
    rater_id INTEGER NOT NULL REFERENCES raters(id), position INTEGER NOT NULL, clip_id INTEGER NOT NULL REFERENCES clips(id),
    is_repeat INTEGER NOT NULL, completion INTEGER NOT NULL, naturalness INTEGER, elapsed_ms INTEGER, created TEXT NOT NULL,
    PRIMARY KEY (rater_id, position));
"""

EXPORT_COLUMNS = ["rater", "position", "is_repeat", "clip_id", "suite", "task", "method", "search_seed",
                  "training_seed", "episode", "episode_seed", "benchmark_score", "completion", "naturalness",
                  "scale_points", "elapsed_ms", "created", "description", "clip_path", "run_dir"]


class AnswerError(ValueError):
    """A malformed or out-of-turn answer; `status` is the HTTP status to send (422 or 409)."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Rater:
    id: int
    name: str
    token: str


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def find_clips(paths: Iterable[str | Path], include_candidates: bool = False) -> list[dict[str, Any]]:
    """Recorded clips (episode<k>.json + .mp4) of the run directories at or below `paths`: the final retrain's,
    and with include_candidates each candidate's too."""
    from bird.analysis.rundir import find_run_dirs
    from bird.learners.video import read_clips

    out = []
    for run in find_run_dirs(list(paths)):
        folders = sorted((run / "final").glob("seed*"))
        if include_candidates:
            folders += sorted((run / "candidates").glob("*"))
        for folder in folders:
            out += [{**rec, "run_dir": str(run)} for rec in read_clips(folder)
                    if rec["path"] and _inside(rec["path"], run)]
    return out


def _inside(path: str | Path, run_dir: str | Path) -> bool:
    """`path` is a plain file (not a link) whose folder, links resolved, lies in `run_dir`: a clip never names
    another file of this machine."""
    path = Path(path)
    real = Path(os.path.realpath(path.parent)) / path.name
    return path.is_file() and not path.is_symlink() and real.is_relative_to(os.path.realpath(run_dir))


class Study:
    """One study database. Every method opens its own connection, so a Study is safe to share between threads."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        with self._connect() as con:
            con.executescript(_SCHEMA)
            con.execute("INSERT OR IGNORE INTO meta VALUES ('scale_points', ?)", (str(SCALE),))
            con.execute("INSERT OR IGNORE INTO meta VALUES ('created', ?)", (_now(),))

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        con = self._connect()
        try:
            yield con
        finally:
            con.close()

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        con.row_factory = sqlite3.Row
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA busy_timeout=10000")
        con.execute("PRAGMA foreign_keys=ON")
        return con

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction taken up front (BEGIN IMMEDIATE): concurrent raters queue instead of failing."""
        with self._connection() as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise

    def meta(self) -> dict[str, str]:
        with self._connection() as con:
            return {r["key"]: r["value"] for r in con.execute("SELECT key, value FROM meta")}

    @property
    def scale_points(self) -> int:
        return int(self.meta()["scale_points"])

    # --- clips and raters ---------------------------------------------------------------------------------
    def add_clips(self, clips: list[dict[str, Any]], completion_only: Iterable[str] = COMPLETION_ONLY) -> int:
        """Register clips (idempotent by path); returns how many were new. New clips join every schedule."""
        skip_natural = set(completion_only)
        new = 0
        with self._write() as con:
            for c in clips:
                cur = con.execute(
                    "INSERT OR IGNORE INTO clips (path, run_dir, suite, task, description, method, search_seed, "
                    "training_seed, episode, episode_seed, score, ask_naturalness, added) "
                    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (str(Path(c["path"]).resolve()), c["run_dir"], c["suite"], c["task"], c.get("description") or "",
                     c.get("method"), c.get("search_seed"), c.get("training_seed"), c.get("episode"),
                     c.get("episode_seed"), c.get("score"), int(c["suite"] not in skip_natural), _now()))
                new += cur.rowcount
            for (rater_id,) in con.execute("SELECT id FROM raters").fetchall():
                self._extend_schedule(con, rater_id)
        return new

    def add_rater(self, name: str, repeat_fraction: float = 0.2, seed: int = 0) -> Rater:
        """A rater with a fresh link token and a shuffled schedule (with unannounced repeats); existing: returned."""
        with self._write() as con:
            row = con.execute("SELECT id, name, token FROM raters WHERE name = ?", (name,)).fetchone()
            if row is not None:
                return Rater(row["id"], row["name"], row["token"])
            token = secrets.token_urlsafe(18)
            rater_id = con.execute("INSERT INTO raters (name, token, created) VALUES (?,?,?)",
                                   (name, token, _now())).lastrowid
            clip_ids = [r[0] for r in con.execute("SELECT id FROM clips ORDER BY id")]
            order = _schedule(clip_ids, repeat_fraction, random.Random(f"{seed}:{name}"))
            con.executemany("INSERT INTO schedule VALUES (?,?,?,?)",
                            [(rater_id, pos, cid, rep) for pos, (cid, rep) in enumerate(order)])
            return Rater(int(rater_id), name, token)  # type: ignore[arg-type]

    def _extend_schedule(self, con: sqlite3.Connection, rater_id: int) -> None:
        """Append clips the rater's schedule lacks (added after the rater), shuffled, without repeats."""
        missing = [r[0] for r in con.execute(
            "SELECT id FROM clips WHERE id NOT IN (SELECT clip_id FROM schedule WHERE rater_id = ?) ORDER BY id",
            (rater_id,))]
        if not missing:
            return
        random.Random(f"extend:{rater_id}:{len(missing)}").shuffle(missing)
        start = con.execute("SELECT COALESCE(MAX(position) + 1, 0) FROM schedule WHERE rater_id = ?",
                            (rater_id,)).fetchone()[0]
        con.executemany("INSERT INTO schedule VALUES (?,?,?,0)",
                        [(rater_id, start + i, cid) for i, cid in enumerate(missing)])

    def raters(self) -> list[Rater]:
        with self._connection() as con:
            return [Rater(r["id"], r["name"], r["token"]) for r in con.execute("SELECT id, name, token FROM raters")]

    def rater_by_token(self, token: str) -> Rater | None:
        with self._connection() as con:
            r = con.execute("SELECT id, name, token FROM raters WHERE token = ?", (token,)).fetchone()
        if r is None or not secrets.compare_digest(r["token"], token):
            return None
        return Rater(r["id"], r["name"], r["token"])

    # --- the rater's session ------------------------------------------------------------------------------
    def progress(self, rater: Rater) -> dict[str, Any]:
        """{total, answered, next: {position, clip_id, suite, task, description, ask_naturalness} | None}."""
        with self._connection() as con:
            total = con.execute("SELECT COUNT(*) FROM schedule WHERE rater_id = ?", (rater.id,)).fetchone()[0]
            answered = con.execute("SELECT COUNT(*) FROM ratings WHERE rater_id = ?", (rater.id,)).fetchone()[0]
            row = con.execute(
                "SELECT s.position, c.id AS clip_id, c.suite, c.task, c.description, c.ask_naturalness "
                "FROM schedule s JOIN clips c ON c.id = s.clip_id WHERE s.rater_id = ? AND s.position NOT IN "
                "(SELECT position FROM ratings WHERE rater_id = ?) ORDER BY s.position LIMIT 1",
                (rater.id, rater.id)).fetchone()
        nxt = None if row is None else {**dict(row), "ask_naturalness": bool(row["ask_naturalness"])}
        return {"total": total, "answered": answered, "next": nxt}

    def clip_path(self, rater: Rater, position: int) -> Path | None:
        """The clip file at `position` of the rater's schedule, if that position is answered or the current one."""
        current = self.progress(rater)["next"]
        limit = current["position"] if current else None
        with self._connection() as con:
            row = con.execute("SELECT c.path, c.run_dir FROM schedule s JOIN clips c ON c.id = s.clip_id "
                              "WHERE s.rater_id = ? AND s.position = ?", (rater.id, position)).fetchone()
        if row is None or (limit is not None and position > limit):
            return None
        path = Path(row["path"])
        return path if _inside(path, row["run_dir"]) else None

    def answer(self, rater: Rater, payload: Any) -> None:
        """Validate and store one answer; raises AnswerError (422 malformed, 409 not the current clip)."""
        if not isinstance(payload, dict):
            raise AnswerError("the answer must be a JSON object")
        unknown = set(payload) - {"position", "completion", "naturalness", "elapsed_ms"}
        if unknown:
            raise AnswerError(f"unknown fields: {sorted(unknown)}")
        k = self.scale_points
        position = _int(payload.get("position"), "position", 0, 10**6)
        completion = _int(payload.get("completion"), "completion", 1, k)
        elapsed = payload.get("elapsed_ms")
        elapsed = None if elapsed is None else _int(elapsed, "elapsed_ms", 0, 10**9)
        with self._write() as con:
            row = con.execute(
                "SELECT s.position, s.clip_id, s.is_repeat, c.ask_naturalness FROM schedule s JOIN clips c "
                "ON c.id = s.clip_id WHERE s.rater_id = ? AND s.position NOT IN "
                "(SELECT position FROM ratings WHERE rater_id = ?) ORDER BY s.position LIMIT 1",
                (rater.id, rater.id)).fetchone()
            if row is None:
                raise AnswerError("every clip is already rated", 409)
            if row["position"] != position:
                raise AnswerError(f"position {position} is not the current clip ({row['position']})", 409)
            if row["ask_naturalness"]:
                naturalness = _int(payload.get("naturalness"), "naturalness", 1, k)
            elif payload.get("naturalness") is not None:
                raise AnswerError("naturalness is not asked for this clip's domain; send null")
            else:
                naturalness = None
            con.execute("INSERT INTO ratings VALUES (?,?,?,?,?,?,?,?)",
                        (rater.id, position, row["clip_id"], row["is_repeat"], completion, naturalness, elapsed, _now()))

    # --- export -------------------------------------------------------------------------------------------
    def rows(self) -> list[dict[str, Any]]:
        """One tidy row per answer (EXPORT_COLUMNS), ordered by rater and position."""
        k = self.scale_points
        with self._connection() as con:
            rows = con.execute(
                "SELECT r.name AS rater, a.position, a.is_repeat, c.id AS clip_id, c.suite, c.task, c.method, "
                "c.search_seed, c.training_seed, c.episode, c.episode_seed, c.score AS benchmark_score, a.completion, "
                "a.naturalness, a.elapsed_ms, a.created, c.description, c.path AS clip_path, c.run_dir "
                "FROM ratings a JOIN raters r ON r.id = a.rater_id JOIN clips c ON c.id = a.clip_id "
                "ORDER BY r.name, a.position").fetchall()
        return [{**{col: dict(row).get(col) for col in EXPORT_COLUMNS}, "scale_points": k} for row in rows]

    def export_csv(self, out: str | Path) -> int:
        """Write the tidy CSV; returns the number of rows."""
        import csv

        rows = self.rows()
        with open(out, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=EXPORT_COLUMNS)
            writer.writeheader()
            writer.writerows({k: csv_cell(v) for k, v in row.items()} for row in rows)  # no formula reaches a sheet
        return len(rows)

    def clip_count(self) -> int:
        with self._connection() as con:
            return int(con.execute("SELECT COUNT(*) FROM clips").fetchone()[0])

    def summary(self) -> str:
        with self._connection() as con:
            n_clips = con.execute("SELECT COUNT(*) FROM clips").fetchone()[0]
            counts = {r["name"]: (r["answered"], r["total"]) for r in con.execute(
                "SELECT r.name, (SELECT COUNT(*) FROM ratings WHERE rater_id = r.id) AS answered, "
                "(SELECT COUNT(*) FROM schedule WHERE rater_id = r.id) AS total FROM raters r ORDER BY r.name")}
        return json.dumps({"clips": n_clips, "raters": counts})


def _int(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise AnswerError(f"{name} must be an integer, got {type(value).__name__}")
    if not low <= value <= high:
        raise AnswerError(f"{name}={value} is outside [{low}, {high}]")
    return value


def _schedule(clip_ids: list[int], repeat_fraction: float, rng: random.Random) -> list[tuple[int, int]]:
    """A shuffled order of every clip plus unannounced repeats: round(fraction × n) clips (at least one when there
    are two or more), each shown again later with at least min(3, n - 1) other clips in between."""
    order = [(cid, 0) for cid in clip_ids]
    rng.shuffle(order)
    n = len(order)
    if n < 2 or repeat_fraction <= 0:
        return order
    gap = min(3, n - 1)
    k = min(max(1, round(repeat_fraction * n)), n - gap)
    for cid, _ in rng.sample(order[: n - gap], k):
        first = next(i for i, (c, rep) in enumerate(order) if c == cid and not rep)
        order.insert(rng.randint(first + 1 + gap, len(order)), (cid, 1))
    return order
