"""The README's first example, timed as a user runs it: one `python -m bird` search from the repository root.

    python bench/bench_quickstart.py [--repeats 3] [--set KEY=VALUE ...]
    python bench/bench_quickstart.py --search method=grace env=babyai/GoToRedBall budget=smoke [--repeats 1]

The command is `python -m bird budget=smoke env=gym/pendulum` (plus `--set` overrides) in a fresh process with a fresh
run directory. Wall time is the figure; CPU counts every process the search started (this script is their subreaper,
so the fork server's workers count too). One dated row per repeat is appended to bench/results/quickstart.csv
(bench/record.py: machine, load, commit, command, wall and CPU seconds). `--search OVERRIDES` times another search the
same way (a suite's smoke search, an issue's "in under a minute"), its rows going to bench/results/search_time.csv.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import record

ROOT = Path(__file__).resolve().parents[1]
COMMAND = ["budget=smoke", "env=gym/pendulum"]  # the README's first example
PR_SET_CHILD_SUBREAPER = 36


def _reap_all() -> None:
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def timed(overrides: list[str]) -> tuple[float, float]:
    """(wall s, CPU s of every process it started) of one search; raises SystemExit when it fails."""
    _reap_all()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as run_dir:
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "bird", *overrides, f"hydra.run.dir={run_dir}"], cwd=ROOT,
                              capture_output=True, text=True)
        wall = time.perf_counter() - start
        if proc.returncode != 0 or not (Path(run_dir) / "result.json").exists():
            raise SystemExit(f"the search failed:\n{proc.stderr[-3000:]}")
    _reap_all()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--set", nargs="*", default=[], help="extra overrides, e.g. budget.max_iterations=1")
    parser.add_argument("--search", nargs="+", help="the search's overrides in place of the README's first example "
                        "(rows to bench/results/search_time.csv)")
    args = parser.parse_args()
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit("prctl(PR_SET_CHILD_SUBREAPER) failed: the CPU of the fork server's workers would be missed")
    overrides = [*(args.search or COMMAND), *args.set]
    bench = "search_time" if args.search else "quickstart"
    for _ in range(args.repeats):
        started = {**record.begin(), "command": "python -m bird " + " ".join(overrides)}
        wall, cpu = timed(overrides)
        record.append(bench, {"wall_s": wall, "cpu_s": cpu}, started)
        print(f"python -m bird {' '.join(overrides)}: wall {wall:.2f} s, CPU {cpu:.2f} s (load {started['load']})",
              flush=True)


if __name__ == "__main__":
    main()
