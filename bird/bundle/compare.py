"""Compare two run directories of one search: what the search computed, not how the execution went.

Read: every record a search writes (JSON, JSON lines, CSV, reward programs, prompts, answers, feedback; arrays in
.npz by value), less what describes the execution (wall times, latencies, cache hits, money spent, the resume
records, events, status, environment, tracker files, the execution-only config keys). Two readings are compared
exactly (bit-for-bit: every float equal) or with a per-metric tolerance (docs/bundles.md, "replay": the comparison).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bird.files import load_npz, loads, loads_lines, read_bytes

__all__ = ["Difference", "Tolerance", "DEFAULT_TOLERANCE", "read_run", "compare_runs", "MEDIA_SUFFIXES",
           "EXECUTION_FILES"]

# files (or folders) that describe the execution only
EXECUTION_FILES = ("events.jsonl", "status.json", "run.lock", "environment.json", "lost_llm_calls.jsonl",
                   "search_state.json", "checkpoint.pkl", "tracker.json", "config.yaml", "tensorboard", "wandb",
                   "mlruns", ".hydra")
MEDIA_SUFFIXES = (".mp4", ".png", ".npz")  # compared only when both sides have them (bundles leave them out)
# keys that describe the execution, by file pattern ("*" = any JSON file); dotted = nested
_EXECUTION_KEYS = {
    "result.json": {"wall_s", "llm_cached_calls", "cost_usd", "resumes", "determinism", "videos"},
    "candidate.json": {"wall_s", "llm.latency_s", "llm.cached", "llm.cost_usd", "llm.attempts",
                       "llm.uncached_cost_usd"},
    "*": {"render_s", "latency_s", "inactive_layers"},  # inactive_layers: the host's sandbox layers (verify.json)
}
# what llm_calls.jsonl contributes: the requests made (their keys), not when or how fast
_JOURNAL_FIELDS = ("purpose", "iteration", "sample_index", "provider", "model", "key", "error", "input_tokens",
                   "output_tokens", "finish_reason")


@dataclass(frozen=True)
class Tolerance:
    """|a − b| ≤ atol + rtol·|b| for numbers of a metric (a curve column, a JSON key); exact for everything else."""

    rtol: float = 0.0
    atol: float = 0.0

    def close(self, a: float, b: float) -> bool:
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return abs(a - b) <= self.atol + self.rtol * abs(b)


# per metric (the last part of a JSON path or a CSV column); "*" = any other number
DEFAULT_TOLERANCE: dict[str, Tolerance] = {
    "*": Tolerance(rtol=1e-6, atol=1e-9),
    "returned_score": Tolerance(rtol=1e-6, atol=1e-9),
    "env_steps": Tolerance(),  # counts are exact
    "iteration": Tolerance(),
}


@dataclass
class Difference:
    path: str  # "candidates/it1-c0/curve.csv:row 2:score", "result.json:returned_score", ...
    recorded: Any
    replayed: Any
    within_tolerance: bool = False

    def __str__(self) -> str:
        return f"{self.path}: recorded {_short(self.recorded)}, replayed {_short(self.replayed)}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _excluded(rel: str) -> bool:
    first = rel.split("/", 1)[0]
    return first in EXECUTION_FILES or rel.endswith((".pkl", ".log", ".tmp", ".zip"))


def _drop(data: Any, keys: set[str]) -> Any:
    """`data` without `keys` (dotted: nested; the "*" keys at every depth, in lists too)."""
    anywhere = keys & _EXECUTION_KEYS["*"]
    if isinstance(data, list):
        return [_drop(x, anywhere) for x in data]
    if not isinstance(data, dict):
        return data
    out = {}
    for k, v in data.items():
        if k in keys:
            continue
        nested = {key.split(".", 1)[1] for key in keys if key.startswith(k + ".")}
        out[k] = _drop(v, nested | anywhere)
    return out


def _json_keys(rel: str) -> set[str]:
    return _EXECUTION_KEYS.get(rel.rsplit("/", 1)[-1], set()) | _EXECUTION_KEYS["*"]


def _csv(text: str) -> dict[str, Any]:
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return {"header": [], "rows": []}

    def num(cell: str) -> Any:
        try:
            return float(cell)
        except ValueError:
            return cell

    return {"header": rows[0], "rows": [[num(c) for c in row] for row in rows[1:]]}


def _npz(path: Path, root: Path) -> dict[str, str]:
    import numpy as np

    return {name: f"{arr.dtype}{list(arr.shape)}:{hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()}"
            for name, arr in sorted(load_npz(path, "arrays", root).items())}


def read_file(root: Path, rel: str) -> Any:
    """One record of a run, parsed and with its execution-only fields left out. Read as bird/files.py reads a file
    another person may have written (a regular file inside `root`, within its cap; JSON with bounds): OSError or
    ValueError otherwise."""
    path = root / rel
    if rel.endswith(".npz"):
        return _npz(path, root)
    data = read_bytes(path, "media", root)
    if rel == "llm_calls.jsonl":
        return sorted(json.dumps({k: c.get(k) for k in _JOURNAL_FIELDS}, sort_keys=True) for c in _objects(data))
    if rel.endswith(".json"):
        return _drop(loads(data), _json_keys(rel))
    if rel.endswith(".jsonl"):
        return [_drop(line, _json_keys(rel)) for line in loads_lines(data)]
    if rel.endswith(".csv"):
        return _csv(data.decode("utf-8"))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "sha256:" + hashlib.sha256(data).hexdigest()


def _objects(data: bytes) -> list[dict[str, Any]]:
    lines = loads_lines(data)
    if not all(isinstance(line, dict) for line in lines):
        raise ValueError("a journal line is not a JSON object")
    return lines


def read_run(root: Path, media: bool = False) -> dict[str, Any]:
    """{relative path: parsed content} of a run directory's records (media files only when `media`)."""
    out = {}
    for path in sorted(p for p in Path(root).rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if _excluded(rel) or (not media and rel.endswith(MEDIA_SUFFIXES)):
            continue
        out[rel] = read_file(Path(root), rel)
    return out


def _walk(a: Any, b: Any, where: str) -> Iterator[tuple[str, Any, Any]]:
    """(path, a, b) of every leaf where a and b differ (numbers compared exactly here)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in list(a) + [k for k in b if k not in a]:
            if k not in a or k not in b:
                yield f"{where}:{k}" if ":" not in where else f"{where}.{k}", a.get(k, "<absent>"), b.get(k, "<absent>")
            else:
                yield from _walk(a[k], b[k], f"{where}:{k}" if ":" not in where else f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            yield f"{where}[len]", len(a), len(b)
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            yield from _walk(x, y, f"{where}[{i}]")
    elif _same(a, b):
        return
    else:
        yield where, a, b


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b or (_number(a) and _number(b) and a == b)


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _metric(path: str) -> str:
    """The metric a JSON difference's path names: its last key, without an index (f.json:a.env_steps[1] -> env_steps)."""
    tail = path.rsplit(":", 1)[-1].split(".")[-1]
    return tail.split("[", 1)[0]


def _csv_diffs(rel: str, a: dict[str, Any], b: dict[str, Any]) -> Iterator[tuple[str, Any, Any, str]]:
    if a["header"] != b["header"]:
        yield f"{rel}:header", a["header"], b["header"], "*"
        return
    if len(a["rows"]) != len(b["rows"]):
        yield f"{rel}:rows", len(a["rows"]), len(b["rows"]), "*"
    for i, (ra, rb) in enumerate(zip(a["rows"], b["rows"], strict=False)):
        if len(ra) != len(rb):
            yield f"{rel}:row {i}:cells", len(ra), len(rb), "*"
        for j, (x, y) in enumerate(zip(ra, rb, strict=False)):
            if not _same(x, y):
                col = a["header"][j] if j < len(a["header"]) else str(j)
                yield f"{rel}:row {i}:{col}", x, y, col


@dataclass
class Comparison:
    """What differs between a recorded and a new reading of a run."""

    differences: list[Difference] = field(default_factory=list)
    only_recorded: list[str] = field(default_factory=list)
    only_replayed: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not (self.differences or self.only_recorded or self.only_replayed)

    @property
    def within_tolerance(self) -> bool:
        return not (self.only_recorded or self.only_replayed) and all(d.within_tolerance for d in self.differences)


def compare_runs(recorded: dict[str, Any], replayed: dict[str, Any],
                 tolerance: dict[str, Tolerance] | None = None) -> Comparison:
    """Every difference between two `read_run` readings; each is marked within tolerance when both sides are
    numbers within the metric's tolerance (text, counts and structure never are)."""
    tol = {**DEFAULT_TOLERANCE, **(tolerance or {})}
    out = Comparison(only_recorded=sorted(set(recorded) - set(replayed)),
                     only_replayed=sorted(set(replayed) - set(recorded)))
    for rel in sorted(set(recorded) & set(replayed)):
        a, b = recorded[rel], replayed[rel]
        if rel.endswith(".csv") and isinstance(a, dict) and isinstance(b, dict):
            diffs = list(_csv_diffs(rel, a, b))
        else:
            diffs = [(p, x, y, _metric(p)) for p, x, y in _walk(a, b, rel)]
        for path, x, y, metric in diffs:
            rule = tol.get(metric, tol["*"])
            ok = _number(x) and _number(y) and rule.close(float(x), float(y))
            out.differences.append(Difference(path, x, y, ok))
    return out
