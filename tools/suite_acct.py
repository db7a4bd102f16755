"""Every process the test suite ran, with its CPU, from the kernel's process accounting (acct(2), BSD v3 records):
what tools/suite_cpu.py cannot see (processes that left the workers' trees, fork servers reaped by init) included.
Needs root and a kernel with CONFIG_BSD_PROCESS_ACCT_V3.

    PYTHONPATH=tools BIRD_TEST_ACCT=/tmp/acct make test ARGS='-p suite_acct'
    python tools/suite_acct.py /tmp/acct [TOP]    # by process name, by module and test, what left the workers' trees

The controller turns accounting on into DIR/pacct for the session; every xdist worker logs when each test ran. A
process is charged to the test its worker was running when the process started (its start time has a resolution of
one second), found by walking its parents up to the worker; a process whose parents exited before it (reparented to
init) is listed under the oldest ancestor the records still show. The jobs of tests/background.py are charged to
the jobs, not to the test their runner's worker was running: each worker logs the runners' pids and job names at its
session's end, and a runner's children are its jobs, in order. bird names its isolated processes (bird-worker,
bird-trainer, bird-inspector, ...); a process is named after its last thread to exit, so a JAX process may show
one of XLA's thread names.
"""

from __future__ import annotations

import bisect
import ctypes
import json
import os
import struct
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ENV = "BIRD_TEST_ACCT"
_RECORD = struct.Struct("<BBHIIIIIIf8H16s")  # struct acct_v3 (linux/acct.h): 64 bytes
_AHZ = 100  # the records' clock ticks per second


@dataclass
class Process:
    pid: int
    ppid: int
    uid: int
    start: int  # seconds since the epoch
    wall: float
    cpu: float  # user + system seconds
    name: str


def _comp(value: int) -> int:
    """comp_t: a 13-bit mantissa and a 3-bit base-8 exponent."""
    return (value & 0x1FFF) << (3 * ((value >> 13) & 7))


def read_records(data: bytes) -> list[Process]:
    """The v3 records in `data`, in the order the processes exited."""
    out = []
    for off in range(0, len(data) - _RECORD.size + 1, _RECORD.size):
        f = _RECORD.unpack_from(data, off)
        if f[1] != 3:
            raise ValueError(f"record {off // _RECORD.size}: acct version {f[1]}, not 3")
        out.append(Process(pid=f[6], ppid=f[7], uid=f[4], start=f[8], wall=f[9] / _AHZ,
                           cpu=(_comp(f[10]) + _comp(f[11])) / _AHZ, name=f[18].split(b"\0")[0].decode(errors="replace")))
    return out


def _jobs(procs: list[Process], runners: dict[int, list[str]]) -> dict[int, str]:
    """{pid of a runner's child: the background job it ran}: a runner runs its jobs one after another, in order."""
    named = {}
    for runner, names in runners.items():
        children = sorted((p for p in procs if p.ppid == runner), key=lambda p: (p.start, p.pid))
        named.update({p.pid: f"background job {name}" for p, name in zip(children, names, strict=False)})
    return named


def charge(procs: list[Process], workers: set[int], tests: dict[int, list[dict[str, Any]]],
           runners: dict[int, list[str]] | None = None) -> tuple[dict[str, float], dict[int, float]]:
    """(CPU per test, of the processes under a worker: its own CPU included, a background job's under the job's name;
    CPU per top ancestor, of those outside). `runners`: {pid of a background runner: its jobs' names, in order}."""
    runners = runners or {}
    by_pid = {p.pid: p for p in procs}
    jobs = _jobs(procs, runners)
    starts = {w: [t["t0"] for t in ts] for w, ts in tests.items()}
    per_test: dict[str, float] = defaultdict(float)
    outside: dict[int, float] = defaultdict(float)
    for ts in tests.values():
        for t in ts:
            per_test[t["id"]] += t["own"]
    for p in procs:
        if p.pid in workers:
            continue
        top, seen = p, set()
        while top.ppid not in workers and top.ppid in by_pid and top.ppid not in seen and top.pid not in jobs:
            seen.add(top.ppid)
            top = by_pid[top.ppid]
        if top.pid in jobs:
            per_test[jobs[top.pid]] += p.cpu
        elif p.pid in runners:
            per_test["background jobs' runner"] += p.cpu
        elif top.ppid in workers:
            i = bisect.bisect_right(starts.get(top.ppid, []), p.start + 0.5) - 1
            per_test[tests[top.ppid][i]["id"] if i >= 0 else "<before the worker's first test>"] += p.cpu
        else:
            outside[top.pid] += p.cpu
    return per_test, outside


def report(folder: str, top: int = 30) -> str:
    """Totals by process name, by module and test, and the subtrees outside the workers'."""
    where = Path(folder)
    procs = read_records((where / "pacct").read_bytes())
    tests: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for path in where.glob("tests-*.jsonl"):
        for line in path.read_text().splitlines():
            rec = json.loads(line)
            tests[rec["pid"]].append(rec)
    for ts in tests.values():
        ts.sort(key=lambda t: t["t0"])
    workers = set(tests)
    runners = {int(r["pid"]): r["names"] for path in where.glob("runners-*.json") for r in json.loads(path.read_text())}
    per_test, outside = charge(procs, workers, tests, runners)
    names: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
    for p in procs:
        names[p.name][0] += 1
        names[p.name][1] += p.cpu
    modules: dict[str, float] = defaultdict(float)
    for test, cpu in per_test.items():
        modules[test.split("::")[0]] += cpu
    by_pid = {p.pid: p for p in procs}
    lines = [f"{len(procs):,} processes, {sum(p.cpu for p in procs):,.1f} s of CPU; under the workers "
             f"(their own CPU included) {sum(per_test.values()):,.1f} s, outside them {sum(outside.values()):,.1f} s",
             "", f"{'CPU s':>8} {'count':>6}  process name"]
    lines += [f"{cpu:8.1f} {n:6d}  {name}" for name, (n, cpu) in sorted(names.items(), key=lambda kv: -kv[1][1])[:top]]
    lines += ["", f"{'CPU s':>8}  module"]
    lines += [f"{cpu:8.1f}  {m}" for m, cpu in sorted(modules.items(), key=lambda kv: -kv[1])[:top]]
    lines += ["", f"{'CPU s':>8}  test"]
    lines += [f"{cpu:8.1f}  {t}" for t, cpu in sorted(per_test.items(), key=lambda kv: -kv[1])[:top]]
    lines += ["", f"{'CPU s':>8}  outside the workers' trees: the oldest ancestor on record (pid, name, wall)"]
    lines += [f"{cpu:8.1f}  {pid} {by_pid[pid].name} {by_pid[pid].wall:.0f} s"
              for pid, cpu in sorted(outside.items(), key=lambda kv: -kv[1])[:top]]
    return "\n".join(lines)


def _own_cpu() -> float:
    t = os.times()
    return t.user + t.system


def pytest_configure(config: Any) -> None:
    if ENV not in os.environ or "PYTEST_XDIST_WORKER" in os.environ:
        return
    folder = Path(os.environ[ENV])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pacct").write_bytes(b"")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.acct(str(folder / "pacct").encode()) != 0:
        raise pytest.UsageError(f"acct({folder / 'pacct'}) failed: {os.strerror(ctypes.get_errno())} (needs root and "
                                "CONFIG_BSD_PROCESS_ACCT_V3)")


def pytest_unconfigure(config: Any) -> None:
    if ENV in os.environ and "PYTEST_XDIST_WORKER" not in os.environ:
        time.sleep(2)  # the workers' last children exit
        ctypes.CDLL(None).acct(None)


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    """In each worker (before the controller removes them): the background runners' pids and jobs."""
    if ENV not in os.environ or "PYTEST_XDIST_WORKER" not in os.environ:
        return
    import background  # tests/background.py

    path = Path(os.environ[ENV]) / f"runners-{os.getpid()}.json"
    path.write_text(json.dumps([{"pid": r["pid"], "names": r["names"]} for r in background.runners()]))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: Any, nextitem: Any) -> Any:
    """Where the test runs: when it started and ended, and its process's own CPU meanwhile."""
    if ENV not in os.environ:
        yield
        return
    t0, own = time.time(), _own_cpu()
    yield
    with open(Path(os.environ[ENV]) / f"tests-{os.getpid()}.jsonl", "a") as fh:
        fh.write(json.dumps({"id": item.nodeid, "pid": os.getpid(), "t0": t0, "t1": time.time(),
                             "own": round(_own_cpu() - own, 3)}) + "\n")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        raise SystemExit(f"usage: {sys.argv[0]} DIR [TOP]")
    print(report(sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 30))
