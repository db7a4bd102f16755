"""Measurements as data: every bench script appends its result as one dated row to `bench/results/<bench>.csv`.

    started = record.begin()                     # date, machine, load, commit, command, taken when the bench starts
    ...
    record.append("overhead", {"raw_wall_s": 28.1, "ratio": 0.997}, started)

A row holds the context columns (CONTEXT) and then the bench's figures. A file whose header lacks a new figure is
rewritten with the union of the columns (older rows leave it empty). `BIRD_BENCH_RESULTS=DIR` sends the rows to DIR
instead (the test suite runs every bench at a tiny budget and keeps its rows out of the repository).
`docs/performance.md` is generated from these files (`python tools/performance.py`).
"""

from __future__ import annotations

import csv
import datetime as dt
import os
import platform
import shlex
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["CONTEXT", "append", "begin", "read", "results_dir"]

ROOT = Path(__file__).resolve().parents[1]
CONTEXT = ("date", "machine", "load", "load_end", "commit", "command")


def results_dir() -> Path:
    """Where rows go: $BIRD_BENCH_RESULTS, else bench/results/ of this checkout."""
    return Path(os.environ.get("BIRD_BENCH_RESULTS") or ROOT / "bench" / "results")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _commit() -> str:
    """Short hash of HEAD, with "+dirty" when tracked files differ from it ("unknown" outside a git checkout)."""
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    head = git("rev-parse", "--short", "HEAD")
    if not head:
        return "unknown"
    return head + ("+dirty" if git("status", "--porcelain", "--untracked-files=no") else "")


def begin(argv: list[str] | None = None) -> dict[str, str]:
    """The context of a measurement starting now: UTC date, machine, 1-minute load average, commit, command."""
    argv = sys.argv if argv is None else argv
    script = Path(argv[0])
    shown = script.relative_to(ROOT) if script.is_absolute() and script.is_relative_to(ROOT) else script
    return {"date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M"),
            "machine": f"{os.cpu_count()} cores, {_cpu_model()}",
            "load": f"{os.getloadavg()[0]:.2f}", "commit": _commit(),
            "command": shlex.join(["python", str(shown), *argv[1:]])}


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return "" if value is None else str(value)


def read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    """(header, rows) of a results file; ([], []) when it does not exist."""
    if not path.exists():
        return [], []
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def append(bench: str, figures: Mapping[str, object], started: Mapping[str, str] | None = None) -> Path:
    """Append one row (context, then `figures`) to <results_dir>/<bench>.csv and return the file's path.

    :param bench: the file's stem, e.g. "overhead" for bench/bench_overhead.py
    :param figures: column -> value (floats written to 6 significant digits, None as empty)
    :param started: begin()'s context; None = taken now
    """
    row = {**(started or begin()), "load_end": f"{os.getloadavg()[0]:.2f}"}
    clash = sorted(set(row) & set(figures))
    if clash:
        raise ValueError(f"figure names {clash} are context columns {CONTEXT}")
    row.update({k: _cell(v) for k, v in figures.items()})
    path = results_dir() / f"{bench}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    header, rows = read(path)
    wanted = [*CONTEXT, *[k for k in header if k not in CONTEXT], *[k for k in row if k not in header and
                                                                   k not in CONTEXT]]
    if header == wanted:
        with open(path, "a", newline="") as fh:
            csv.DictWriter(fh, fieldnames=wanted).writerow(row)
        return path
    tmp = path.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=wanted)
        writer.writeheader()
        writer.writerows([*rows, row])
    tmp.replace(path)
    return path
