"""`python -m bird.status DIR...`: progress of searches and sweeps, read from their status files only.

It reads `status.json` of every run directory under each DIR and, for a sweep, the cell count from Hydra's
`multirun.yaml`, so it works from any node of a cluster with the shared filesystem; it never looks at processes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from bird.completed import DONE, END_STATES
from bird.escape import printable, terminal
from bird.files import load_yaml, read_json, read_text

__all__ = ["run_statuses", "sweep_cells", "SweepFileError", "summarise", "headline", "main"]

STATES = (DONE, "running", *(s for s in END_STATES if s != DONE))  # every other end state is not done
_MAX_OVERRIDES = 1000       # overrides a multirun.yaml may hold
_MAX_OVERRIDE_CHARS = 10_000  # characters of one (Hydra's parser is slow on a megabyte of choices)


def run_statuses(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """(run directory, status.json content) for every run at or below `root`; a file bird does not read (not JSON,
    not an object, a FIFO, a link leaving the run, over its size cap) counts as failed, with the reason."""
    out = []
    for here, dirs, files in os.walk(root):
        if "status.json" in files:
            dirs.clear()  # a run directory holds no other runs
            try:
                status = read_json(Path(here) / "status.json", "status", Path(here))
            except (OSError, ValueError) as exc:
                status = {"state": "failed", "error": f"unreadable status.json ({exc})"}
            out.append((Path(here), status if isinstance(status, dict) else
                        {"state": "failed", "error": "status.json is not a JSON object"}))
        else:
            dirs.sort()
    return sorted(out, key=lambda item: str(item[0]))


class SweepFileError(ValueError):
    """A multirun.yaml whose cells bird cannot count; the message says why."""


def sweep_cells(sweep_dir: Path) -> int | None:
    """Cells a Hydra sweep launched from `sweep_dir` has (its multirun.yaml), None when it is not a sweep.

    Counted as the product of each swept key's number of values, never by listing the cells (a 109-byte file can
    describe 50,000² of them). Raises SweepFileError for a file it cannot read or count.
    """
    path = sweep_dir / "multirun.yaml"
    if not path.is_file():
        return None
    params, task = _sweep_overrides(path)
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        overrides = OverridesParser.create().parse_overrides([f"{k}={v}" for k, v in params.items()] + task)
    except Exception as exc:  # Hydra's grammar errors
        raise SweepFileError(f"{path}: an override does not parse ({str(exc)[:200]})") from None
    counts: dict[str, int] = {}
    for override in overrides:  # a key given twice counts once, the last value wins (as Hydra's sweeper does)
        counts[override.get_key_element()] = _values(override, path)
    return math.prod(counts.values())


def _sweep_overrides(path: Path) -> tuple[dict[str, Any], list[str]]:
    """`hydra.sweeper.params` and `hydra.overrides.task` of a multirun.yaml, as plain data (nothing resolved)."""
    try:
        data = load_yaml(read_text(path, "config", path.parent))
    except (OSError, ValueError) as exc:
        raise SweepFileError(f"{path}: unreadable ({exc})") from None
    hydra = data.get("hydra") if isinstance(data, dict) else None
    hydra = hydra if isinstance(hydra, dict) else {}
    params = (hydra.get("sweeper") or {}).get("params") if isinstance(hydra.get("sweeper"), dict) else None
    task = (hydra.get("overrides") or {}).get("task") if isinstance(hydra.get("overrides"), dict) else None
    params, task = params or {}, task or []
    if not isinstance(params, dict) or not isinstance(task, list) or not all(isinstance(t, str) for t in task):
        raise SweepFileError(f"{path}: hydra.sweeper.params is not a mapping or hydra.overrides.task not a list "
                             "of strings")
    if len(params) + len(task) > _MAX_OVERRIDES:
        raise SweepFileError(f"{path}: {len(params) + len(task)} overrides (at most {_MAX_OVERRIDES})")
    longest = max((len(f"{k}={v}") for k, v in params.items()), default=0)
    if max([longest, *map(len, task)]) > _MAX_OVERRIDE_CHARS:
        raise SweepFileError(f"{path}: an override of more than {_MAX_OVERRIDE_CHARS} characters")
    return params, task


def _values(override: Any, path: Path) -> int:
    """How many values one override takes: 1, a choice list's length, a range's length, a glob's matches."""
    from hydra.core.override_parser.types import ChoiceSweep, Glob, RangeSweep

    if not override.is_sweep_override():
        return 1
    value = override.value()  # the parsed sweep, not enumerated
    if isinstance(value, list):
        return len(value)
    if isinstance(value, ChoiceSweep):
        return len(value.list)
    if isinstance(value, RangeSweep) and value.step:
        if all(isinstance(x, int) for x in (value.start, value.stop, value.step)):
            return len(range(value.start, value.stop, value.step))
        return max(0, math.ceil((value.stop - value.start) / value.step))
    if isinstance(value, Glob):
        from bird.config.load import CONF_DIR

        group = CONF_DIR / override.key_or_group
        return len(value.filter(sorted(p.stem for p in group.glob("*.yaml")))) if group.is_dir() else 0
    raise SweepFileError(f"{path}: {override.input_line!r} is not a sweep the basic sweeper enumerates")


def _age(updated: str | None, now: dt.datetime) -> str:
    if not updated:
        return "—"
    try:
        seconds = (now - dt.datetime.fromisoformat(updated)).total_seconds()
    except (ValueError, TypeError):  # not an ISO time, or one without a time zone
        return "—"
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def _count(value: Any) -> int:
    """A recorded count (env steps, LLM calls) as an int; anything else (a string, a list, inf, 10**400) is 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e18:
        return 0
    return int(value)


def summarise(root: Path) -> dict[str, Any]:
    """Counts (completed, running, failed, not_started), env steps and LLM calls so far, and the runs; `note` says
    why a sweep's cells could not be counted."""
    runs = run_statuses(root)
    counts = {s: sum(1 for _, st in runs if st.get("state") == s) for s in STATES}
    try:
        cells, note = sweep_cells(root), None
    except SweepFileError as exc:
        cells, note = None, f"cells not counted: {exc}"
    counts["not_started"] = max(0, cells - len(runs)) if cells is not None else 0
    return {"root": str(root), "cells": cells if cells is not None else len(runs), **counts,
            "env_steps": sum(_count(st.get("env_steps")) for _, st in runs),
            "llm_calls": sum(_count(st.get("llm_calls")) for _, st in runs), "note": note,
            "runs": [{"dir": str(p.relative_to(root)) if p != root else ".", **st} for p, st in runs]}


def headline(summary: dict[str, Any]) -> str:
    states = " · ".join(f"{summary[s]} {s}" for s in STATES)
    return terminal(f"{summary['root']}: {summary['cells']} cells · {states} · {summary['not_started']} not started · "
                    f"{summary['env_steps']:,} env steps · {summary['llm_calls']:,} LLM calls"
                    + (f" ({summary['note']})" if summary.get("note") else ""))


def _cell(value: Any, limit: int) -> str:
    """A table cell from a status file: printable on a terminal (no escape sequence), no Rich markup."""
    return escape(printable(str(value))[:limit])


def _table(summary: dict[str, Any], show_all: bool) -> Table:
    now = dt.datetime.now(dt.UTC)
    table = Table()
    table.add_column("run", no_wrap=True)
    for col in ("state", "iteration", "env steps", "LLM calls", "updated", "note"):
        table.add_column(col)
    for run in summary["runs"]:
        state = str(run.get("state", "?"))
        if state == "completed" and not show_all:
            continue
        it = run.get("iteration")
        shown_it = f"{it}/{run.get('iterations')}" if isinstance(it, int) else str(it or "—")
        note = str(run.get("error") or "")
        score = run.get("returned_score")
        if state == "completed" and isinstance(score, int | float) and not isinstance(score, bool):
            note = f"score {score:.3f}"
        table.add_row(_cell(run["dir"], 200), _cell(state, 40), _cell(shown_it, 40), f"{_count(run.get('env_steps')):,}",
                      f"{_count(run.get('llm_calls')):,}", _age(run.get("updated"), now) + " ago", _cell(note, 120))
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bird.status", description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", type=Path, help="run directories or sweep directories")
    parser.add_argument("--all", action="store_true", help="list completed runs too")
    parser.add_argument("--json", action="store_true", help="print the summaries as JSON")
    args = parser.parse_args(argv)
    missing = [str(d) for d in args.dirs if not d.is_dir()]
    if missing:
        print(f"bird.status: not a directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    summaries = [summarise(d) for d in args.dirs]
    if args.json:
        print(json.dumps([{k: v for k, v in s.items() if args.all or k != "runs"} for s in summaries], indent=1))
        return 0
    console = Console(highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 160)
    for s in summaries:
        print(headline(s))
        if args.all or any(s[state] for state in STATES if state != DONE):
            console.print(_table(s, args.all))
    return 0


if __name__ == "__main__":
    sys.exit(main())
