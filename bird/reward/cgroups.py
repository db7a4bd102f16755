"""A cgroup of its own for one isolated process: `pids.max` and `memory.max` (cgroup v2; on request also the v1 pids
controller of a hybrid machine, pids.max only). It is made only *under the cgroup the process already runs in*, so
it can tighten limits and never escape one; where that parent does not allow children (no controller delegated,
not writable), there is none and the caller says so. The host removes it once the process is gone (`remove`)."""

from __future__ import annotations

import os
import time

__all__ = ["KINDS", "PREFIX", "parent", "enter", "fired", "remove"]

PREFIX = "bird-worker-"
KINDS = frozenset({"v2", "any", "off"})  # IsolationConfig.cgroup


def _mounts() -> dict[str, str]:
    """{"v2": cgroup2 mount point, "pids": the v1 pids hierarchy's mount point}, where mounted."""
    found: dict[str, str] = {}
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            pre, _, post = line.partition(" - ")
            fstype, _, superopts = (post.split() + ["", "", ""])[:3]
            point = pre.split()[4].replace("\\040", " ")
            if fstype == "cgroup2":
                found.setdefault("v2", point)
            elif fstype == "cgroup" and "pids" in superopts.split(","):
                found.setdefault("pids", point)
    return found


def _own() -> dict[str, str]:
    """This process's cgroup paths: {"v2": path, "pids": path}."""
    own: dict[str, str] = {}
    with open("/proc/self/cgroup") as fh:
        for line in fh:
            hid, controllers, path = line.rstrip("\n").split(":", 2)
            if hid == "0" and not controllers:
                own["v2"] = path
            elif "pids" in controllers.split(","):
                own["pids"] = path
    return own


def _read(path: str) -> str:
    try:
        with open(path) as fh:
            return fh.read()
    except OSError:
        return ""


def parent(v1: bool = True) -> tuple[str, str] | None:
    """(directory, "v2" | "v1") where this process may make a child cgroup with a pids limit, or None."""
    mounts, own = _mounts(), _own()
    if "v2" in mounts and "v2" in own:
        here = os.path.normpath(mounts["v2"] + own["v2"])
        if "pids" in _read(f"{here}/cgroup.subtree_control").split() and os.access(here, os.W_OK):
            return here, "v2"
    if v1 and "pids" in mounts and "pids" in own:
        here = os.path.normpath(mounts["pids"] + own["pids"])
        if os.path.exists(f"{here}/cgroup.procs") and os.access(here, os.W_OK):
            return here, "v1"
    return None


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def enter(name: str, max_tasks: int, memory_bytes: int | None, v1: bool = False) -> str:
    """Make cgroup `name` under `parent()`, set its limits and move this process into it. Returns what was set;
    raises OSError when no cgroup can be made here."""
    found = parent(v1)
    if found is None:
        v1_note = ("a v1 pids hierarchy would need to be writable" if v1 else
                   "a v1 pids hierarchy is not used unless asked (cgroup='any')")
        raise OSError("no cgroup with the pids controller can be made under this process's cgroup: cgroup v2 needs "
                      f"pids enabled in its cgroup.subtree_control (a delegated subtree); {v1_note}")
    where, kind = found
    path = os.path.join(where, name)
    os.makedirs(path, exist_ok=True)
    _write(f"{path}/pids.max", str(max_tasks))
    parts = [f"pids.max={max_tasks}"]
    if kind == "v2" and memory_bytes and "memory" in _read(f"{where}/cgroup.subtree_control").split():
        _write(f"{path}/memory.max", str(memory_bytes))
        if os.path.exists(f"{path}/memory.swap.max"):
            _write(f"{path}/memory.swap.max", "0")
        parts.append(f"memory.max={memory_bytes // 2**20} MiB")
    _write(f"{path}/cgroup.procs", "0")  # 0: the writing process
    return f"cgroup {kind} {path}: {', '.join(parts)}"


def fired(name: str) -> str:
    """Which limit of cgroup `name` the kernel enforced so far, as text ("" when none, or no such cgroup): the
    out-of-memory killer (memory.events oom_kill) or the task limit (pids.events max)."""
    found = parent(v1=True)
    if found is None:
        return ""
    path, hits = os.path.join(found[0], name), []
    for fname, key, what in (("memory.events", "oom_kill", "memory.max"), ("pids.events", "max", "pids.max")):
        counts = dict(line.split() for line in _read(f"{path}/{fname}").splitlines() if len(line.split()) == 2)
        if counts.get(key, "0") not in ("", "0"):
            hits.append(what)
    return f"{' and '.join(hits)} of its cgroup ({path})" if hits else ""


def remove(name: str, wait_s: float = 2.0) -> None:
    """Remove cgroup `name` (once its processes are gone; they may take a moment to exit after SIGKILL)."""
    found = parent()
    if found is None:
        return
    path = os.path.join(found[0], name)
    deadline = time.monotonic() + wait_s
    while os.path.isdir(path):
        try:
            os.rmdir(path)
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.01)
