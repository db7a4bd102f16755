"""`python -m bird.status DIR...`: progress of searches and sweeps, read from their status files only.

It reads `status.json` of every run directory under each DIR and, for a sweep, the cell count from Hydra's
`multirun.yaml`, so it works from any node of a cluster with the shared filesystem; it never looks at processes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from bird.completed import DONE, END_STATES

__all__ = ["run_statuses", "sweep_cells", "summarise", "headline", "main"]

STATES = (DONE, "running", *(s for s in END_STATES if s != DONE))  # every other end state is not done


def run_statuses(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """(run directory, status.json content) for every run at or below `root`; unreadable files count as failed."""
    out = []
    for here, dirs, files in os.walk(root):
        if "status.json" in files:
            dirs.clear()  # a run directory holds no other runs
            try:
                status = json.loads((Path(here) / "status.json").read_text())
            except (OSError, ValueError) as exc:
                status = {"state": "failed", "error": f"unreadable status.json ({exc})"}
            out.append((Path(here), status if isinstance(status, dict) else {"state": "failed"}))
        else:
            dirs.sort()
    return sorted(out, key=lambda item: str(item[0]))


def sweep_cells(sweep_dir: Path) -> int | None:
    """Cells a Hydra sweep launched from `sweep_dir` has (its multirun.yaml), None when it is not a sweep."""
    path = sweep_dir / "multirun.yaml"
    if not path.is_file():
        return None
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(path)
    params = OmegaConf.select(cfg, "hydra.sweeper.params") or {}
    task = list(OmegaConf.select(cfg, "hydra.overrides.task") or [])
    overrides = OverridesParser.create().parse_overrides([f"{k}={v}" for k, v in params.items()] + task)
    return sum(len(batch) for batch in BasicSweeper.split_arguments(overrides, None))


def _age(updated: str | None, now: dt.datetime) -> str:
    if not updated:
        return "—"
    try:
        seconds = (now - dt.datetime.fromisoformat(updated)).total_seconds()
    except ValueError:
        return "—"
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min" if seconds >= 60 else f"{seconds:.0f} s"


def summarise(root: Path) -> dict[str, Any]:
    """Counts (completed, running, failed, not_started), env steps and LLM calls so far, and the runs."""
    runs = run_statuses(root)
    counts = {s: sum(1 for _, st in runs if st.get("state") == s) for s in STATES}
    cells = sweep_cells(root)
    counts["not_started"] = max(0, cells - len(runs)) if cells is not None else 0
    return {"root": str(root), "cells": cells if cells is not None else len(runs), **counts,
            "env_steps": sum(int(st.get("env_steps") or 0) for _, st in runs),
            "llm_calls": sum(int(st.get("llm_calls") or 0) for _, st in runs),
            "runs": [{"dir": str(p.relative_to(root)) if p != root else ".", **st} for p, st in runs]}


def headline(summary: dict[str, Any]) -> str:
    states = " · ".join(f"{summary[s]} {s}" for s in STATES)
    return (f"{summary['root']}: {summary['cells']} cells · {states} · {summary['not_started']} not started · "
            f"{summary['env_steps']:,} env steps · {summary['llm_calls']:,} LLM calls")


def _table(summary: dict[str, Any], show_all: bool) -> Table:
    now = dt.datetime.now(dt.UTC)
    table = Table()
    table.add_column("run", no_wrap=True)
    for col in ("state", "iteration", "env steps", "LLM calls", "updated", "note"):
        table.add_column(col)
    for run in summary["runs"]:
        state = run.get("state", "?")
        if state == "completed" and not show_all:
            continue
        it = run.get("iteration")
        shown_it = f"{it}/{run.get('iterations')}" if isinstance(it, int) else str(it or "—")
        note = run.get("error") or ""
        if state == "completed" and run.get("returned_score") is not None:
            note = f"score {run['returned_score']:.3f}"
        table.add_row(escape(run["dir"]), state, shown_it, f"{int(run.get('env_steps') or 0):,}",
                      str(run.get("llm_calls") or 0), _age(run.get("updated"), now) + " ago", escape(note[:120]))
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
