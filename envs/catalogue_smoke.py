"""`make catalogue`: a `budget=smoke` search on every task of the catalogue, one `python -m bird` process each, appended
as dated rows to bench/results/catalogue_smoke.csv (docs/tasks.md reads the last row of each task). Not part of CI:
it takes about a minute per task on 2 cores."""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bird.envs.catalogue import BENCHMARK_SIGNAL, ROOT, SMOKE_RESULTS, TaskRow

__all__ = ["smoke_command", "run_smoke", "FIELDS"]

FIELDS = ("date", "machine", "load", "commit", "env", "method", "passed", "returned_score", "wall_s", "command")
PREFERRED = "eureka"  # the method a task's smoke search runs, where the task serves it


def smoke_command(row: TaskRow, run_dir: Path) -> tuple[str, list[str]]:
    """(method, overrides) of a task's smoke search: eureka where it runs (with the benchmark score as its signal on a
    task without a reference reward), else the first method that runs there."""
    if PREFERRED in row.methods:
        method, extra = PREFERRED, []
    elif PREFERRED in row.benchmark_methods:
        method, extra = PREFERRED, list(BENCHMARK_SIGNAL)
    else:
        method, extra = (row.methods or row.benchmark_methods or (PREFERRED,))[0], []
        extra = list(BENCHMARK_SIGNAL) if method in row.benchmark_methods else []
    return method, [f"method={method}", f"env={row.env_id}", "budget=smoke", "run.progress=false", *extra,
                    f"hydra.run.dir={run_dir}"]


def _machine() -> str:
    return f"{platform.node() or 'unknown'} ({os.cpu_count()} cores, {platform.machine()})"


def _commit() -> str:
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return proc.stdout.strip() or "unknown"


def _one(row: TaskRow, timeout_s: float) -> dict[str, str]:
    with tempfile.TemporaryDirectory(prefix="bird-catalogue-") as tmp:
        method, overrides = smoke_command(row, Path(tmp) / "run")
        load = os.getloadavg()[0]
        start = time.monotonic()
        timed_out = False
        try:
            proc = subprocess.run([sys.executable, "-m", "bird", *overrides], cwd=ROOT, capture_output=True, text=True,
                                  timeout=timeout_s)
            ok = proc.returncode == 0
        except subprocess.TimeoutExpired:
            ok, timed_out = False, True  # not a failure of the task: the machine was too slow or too busy
        wall = time.monotonic() - start
        result = Path(tmp) / "run" / "result.json"
        ok = ok and result.exists()
        score = json.loads(result.read_text()).get("returned_score") if ok else None
    shown = " ".join(o for o in overrides if not o.startswith("hydra.run.dir"))
    return {"env": row.env_id, "method": method, "passed": "yes" if ok else "timeout" if timed_out else "no",
            "returned_score": "" if score is None else f"{score:.4g}", "wall_s": f"{wall:.1f}",
            "load": f"{load:.2f}", "command": f"python -m bird {shown}"}


def run_smoke(rows: list[TaskRow], out: Path = SMOKE_RESULTS, timeout_s: float = 900.0) -> list[dict[str, str]]:
    """Run each task's smoke search in turn, appending its row to `out` as it finishes."""
    stamp = {"date": dt.date.today().isoformat(), "machine": _machine(), "commit": _commit()}
    out.parent.mkdir(parents=True, exist_ok=True)
    new = not out.exists()
    done = []
    with open(out, "a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        if new:
            writer.writeheader()
        for row in rows:
            record = {**stamp, **_one(row, timeout_s)}
            writer.writerow(record)
            fh.flush()
            done.append(record)
            print(f"{record['env']:34} {record['method']:10} {record['passed']:4} {record['wall_s']:>7} s", flush=True)
    return done
