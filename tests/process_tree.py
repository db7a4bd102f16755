"""A search's process tree read from /proc, and a search command killed with SIGKILL (the orphan tests:
tests/test_orphans.py, tests/jaxpath/test_jax_orphans.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
Proc = tuple[int, int]  # (pid, start time in clock ticks): a pid the kernel reused is another process


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, parent pid, start time) of `pid`, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[19])


def descendants(root: int) -> set[Proc]:
    """Every process below `root` now."""
    table = {int(d): st for d in os.listdir("/proc") if d.isdigit() and (st := _stat(int(d))) is not None}
    found, todo = set(), [root]
    while todo:
        parent = todo.pop()
        for pid, (_, ppid, start) in table.items():
            if ppid == parent and (pid, start) not in found:
                found.add((pid, start))
                todo.append(pid)
    return found


def alive(proc: Proc) -> bool:
    st = _stat(proc[0])
    return st is not None and st[2] == proc[1] and st[0] not in "ZX"  # a zombie has ended


def cmdline(proc: Proc) -> str:
    try:
        return Path(f"/proc/{proc[0]}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def name(proc: Proc) -> str:
    try:
        return Path(f"/proc/{proc[0]}/comm").read_text().strip()
    except OSError:
        return ""


def describe(proc: Proc) -> str:
    """The process's name, uid and command line (for messages)."""
    return f"{proc[0]} {name(proc)} uid {uid(proc)}: {cmdline(proc)[:150]}"


def uid(proc: Proc) -> int | None:
    try:
        status = Path(f"/proc/{proc[0]}/status").read_text()
    except OSError:
        return None
    return int(next(line for line in status.splitlines() if line.startswith("Uid:")).split()[1])


def kill_search_when(overrides: list[str], run: Path, ready: Callable[[set[Proc]], bool],
                     timeout_s: float = 600.0) -> tuple[dict[Proc, str], set[Proc]]:
    """Start `python -m bird OVERRIDES` into `run`, SIGKILL the search process alone (not its group) once
    `ready(its live descendants)` holds; returns (the processes it had started, each described as it was just
    before the kill, and those still alive 10 s later)."""
    cmd = [sys.executable, "-m", "bird", *overrides, f"hydra.run.dir={run}"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    seen: set[Proc] = set()
    try:
        deadline = time.monotonic() + timeout_s
        while proc.poll() is None and time.monotonic() < deadline:
            seen |= descendants(proc.pid)
            if ready({p for p in seen if alive(p)}):
                break
            time.sleep(0.1)
        assert proc.poll() is None, f"the search ended (rc {proc.returncode}) before it was ready to be killed"
        seen |= descendants(proc.pid)
        before = {p: describe(p) for p in seen if alive(p)}
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        deadline = time.monotonic() + 10.0
        while any(alive(p) for p in seen) and time.monotonic() < deadline:
            time.sleep(0.1)
        return before, {p for p in seen if alive(p)}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for p in seen:  # what a failing test found alive: not left to the rest of the suite
            if alive(p):
                os.kill(p[0], signal.SIGKILL)
