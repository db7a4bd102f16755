"""Where the test suite's CPU goes, test by test: a pytest plugin that logs, for every test, the CPU time of the
process that ran it and of every process under it (live ones from /proc, reaped ones through their parents' counts),
and a report over those logs.

    PYTHONPATH=tools BIRD_TEST_CPU_LOG=/tmp/cpu make test ARGS='-p suite_cpu'
    python tools/suite_cpu.py /tmp/cpu            # per module, then the costliest tests

A test is charged with what its xdist worker's process tree used while it ran: its own CPU, its subprocesses',
and what long-lived helpers under that worker (a fork server and its workers, Ray's processes) used meanwhile. The
runner of tests/background.py and its jobs are counted apart. A process that leaves the tree before it is reaped is
not counted: the fork server of a `python -m bird` subprocess or a bench script outlives its parent for a moment and
is reaped by init, with the CPU of every training worker it forked. Compare the total with /proc/stat's.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

ENV = "BIRD_TEST_CPU_LOG"
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat_cpu(pid: int) -> float:
    """utime + stime + cutime + cstime of `pid`, in seconds (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return sum(int(f) for f in fields[11:15]) / _TICK
    except (OSError, ValueError, IndexError):
        return 0.0


def _tree_cpu(pid: int) -> tuple[dict[int, float], float]:
    """CPU of every live process under `pid` (not `pid` itself): per background runner, its subtree's; the rest's."""
    rest, runners = 0.0, {}
    todo = [(pid, 0)]
    while todo:
        parent, runner = todo.pop()
        try:
            kids = [int(k) for k in Path(f"/proc/{parent}/task/{parent}/children").read_text().split()]
        except (OSError, ValueError):
            kids = []
        for kid in kids:
            root = runner
            if not root:
                try:
                    root = kid if b"tests/background.py" in Path(f"/proc/{kid}/cmdline").read_bytes() else 0
                except OSError:
                    pass
            todo.append((kid, root))
            if root:
                runners[root] = runners.get(root, 0.0) + _stat_cpu(kid)
            else:
                rest += _stat_cpu(kid)
    return runners, rest


_runners: dict[int, float] = {}  # background runner pid -> its subtree's CPU when last seen
_reaped_background = 0.0  # runners since reaped by this process: their CPU is in os.times()'s children now


def _now() -> tuple[float, float, float, float]:
    """(own CPU, CPU of the processes under this one but the background runner's, the runner's, monotonic time)."""
    global _runners, _reaped_background
    t = os.times()
    runners, rest = _tree_cpu(os.getpid())
    _reaped_background += sum(cpu for pid, cpu in _runners.items() if pid not in runners)
    _runners = runners
    children = t.children_user + t.children_system - _reaped_background + rest
    return t.user + t.system, children, sum(runners.values()) + _reaped_background, time.monotonic()


def _write(record: dict[str, Any]) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(f"{os.environ[ENV]}.{worker}.jsonl", "a") as fh:
        fh.write(json.dumps(record) + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any) -> Any:
    """Runs where the test runs (an xdist worker), around its setup, call and teardown."""
    start = _now() if ENV in os.environ else None
    yield
    if start is not None:
        own, children, background, wall = (b - a for a, b in zip(start, _now(), strict=True))
        _write({"test": item.nodeid, "own": round(own, 3), "children": round(children, 3),
                "background": round(background, 3), "wall": round(wall, 3)})


def pytest_unconfigure(config: Any) -> None:
    if ENV in os.environ and "PYTEST_XDIST_WORKER" in os.environ:
        own, children, background, _ = _now()
        _write({"test": "<session end>", "own_total": round(own, 3), "children_total": round(children + background, 3)})


def report(prefix: str, top: int = 40) -> str:
    """Per-module CPU (own + children), largest first, then the `top` costliest tests."""
    tests: dict[str, float] = defaultdict(float)
    modules: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    totals = [0.0, 0.0]
    background = 0.0
    for path in sorted(Path(prefix).parent.glob(Path(prefix).name + ".*.jsonl")):
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            if rec["test"] == "<session end>":
                totals[0] += rec["own_total"]
                totals[1] += rec["children_total"]
                continue
            background += rec.get("background", 0.0)
            module = rec["test"].split("::")[0]
            modules[module][0] += rec["own"]
            modules[module][1] += rec["children"]
            modules[module][2] += rec["wall"]
            tests[rec["test"]] += rec["own"] + rec["children"]
    logged = sum(own + children for own, children, _ in modules.values())
    lines = [f"CPU logged per test: {logged:,.0f} s; the background jobs while the tests ran: {background:,.0f} s; "
             f"the workers' whole CPU (own + reaped children): {sum(totals):,.0f} s", "", f"{'own s':>8} {'children s':>10} {'wall s':>8}  module"]
    for module, (own, children, wall) in sorted(modules.items(), key=lambda kv: -(kv[1][0] + kv[1][1])):
        lines.append(f"{own:8.1f} {children:10.1f} {wall:8.1f}  {module}")
    lines += ["", f"{'CPU s':>8}  test"]
    lines += [f"{cpu:8.1f}  {name}" for name, cpu in sorted(tests.items(), key=lambda kv: -kv[1])[:top]]
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        raise SystemExit(f"usage: {sys.argv[0]} LOG_PREFIX [TOP]")
    print(report(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 40))
