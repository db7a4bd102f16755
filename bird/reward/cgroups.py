"""Memory and task limits for one isolated process, set by the host in a cgroup of its own: cgroup v2 where the
host's cgroup delegates the `memory` and `pids` controllers to children, else the cgroup v1 `memory` and `pids`
hierarchies where this process may create groups (root on a v1 or hybrid machine), else none (the process's own
rlimits are then its only limits: isolation.IsolationConfig.max_tasks, memory_mb).

The host moves the process in right after starting it, before it reads its first request (so before any thread or
untrusted code exists), and removes the groups after reaping it.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CgroupLimit", "attach"]


@dataclass
class CgroupLimit:
    """The groups one process was put in, what they enforce, and how to read what fired."""

    version: int
    dirs: list[Path] = field(default_factory=list)
    limits: list[str] = field(default_factory=list)

    @property
    def how(self) -> str:
        return f"cgroup v{self.version}: {', '.join(self.limits)}"

    def fired(self) -> str:
        """Which limit the kernel enforced so far ("" when none): the OOM killer or the task limit."""
        found = []
        for d in self.dirs:
            for name, key, what in (("memory.events", "oom_kill", "the memory limit"),
                                    ("memory.oom_control", "oom_kill", "the memory limit"),
                                    ("pids.events", "max", "the task limit")):
                counts = _keyed(d / name)
                if counts.get(key, 0) > 0 and what not in found:
                    found.append(what)
        return " and ".join(found)

    def release(self) -> None:
        """Remove the groups (the process must be reaped; an empty group can be removed)."""
        for d in reversed(self.dirs):
            with contextlib.suppress(OSError):
                d.rmdir()
        self.dirs = []


def _keyed(path: Path) -> dict[str, int]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    out = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(mount point, fs type, super options) of the cgroup file systems, from /proc/self/mountinfo."""
    out = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            left, _, right = line.partition(" - ")
            fstype, _, options = (right.split() + ["", "", ""])[:3]
            if fstype in ("cgroup", "cgroup2"):
                out.append((left.split()[4], fstype, set(options.split(","))))
    return out


def _own_groups() -> dict[str, str]:
    """controller (or "" for v2) -> this process's group path, from /proc/self/cgroup."""
    out = {}
    with open("/proc/self/cgroup") as fh:
        for line in fh:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for c in controllers.split(",") if controllers else [""]:
                out[c] = path
    return out


def _make(parent: Path, name: str, files: dict[str, str], pid: int) -> Path:
    """A child group of `parent` with `files` written, holding `pid`; removed again if any step fails."""
    d = parent / name
    d.mkdir(mode=0o755)
    try:
        for fname, value in files.items():
            (d / fname).write_text(value)
        (d / "cgroup.procs").write_text(str(pid))
    except OSError:
        with contextlib.suppress(OSError):
            d.rmdir()
        raise
    return d


def _v2(pid: int, name: str, memory_mb: int, max_tasks: int) -> CgroupLimit | None:
    own = _own_groups().get("")
    for mount, fstype, _ in _mounts():
        if fstype != "cgroup2" or own is None:
            continue
        parent = Path(mount + own.rstrip("/"))
        try:
            delegated = set((parent / "cgroup.subtree_control").read_text().split())
        except OSError:
            continue
        files, limits = {}, []
        if memory_mb and "memory" in delegated:
            files.update({"memory.max": str(memory_mb * 2**20), "memory.swap.max": "0"})
            limits.append(f"memory.max={memory_mb} MiB")
        if max_tasks and "pids" in delegated:
            files["pids.max"] = str(max_tasks)
            limits.append(f"pids.max={max_tasks}")
        if not files:
            return None
        try:
            if not (parent / "memory.swap.max").exists():
                files.pop("memory.swap.max", None)
            return CgroupLimit(2, [_make(parent, name, files, pid)], limits)
        except OSError:
            return None
    return None


def _v1(pid: int, name: str, memory_mb: int, max_tasks: int) -> CgroupLimit | None:
    own = _own_groups()
    wanted = {"memory": memory_mb, "pids": max_tasks}
    got = CgroupLimit(1)
    for mount, fstype, options in _mounts():
        for controller, value in wanted.items():
            if fstype != "cgroup" or controller not in options or not value or controller not in own:
                continue
            parent = Path(mount + own[controller].rstrip("/"))
            if controller == "memory":
                files = {"memory.limit_in_bytes": str(value * 2**20)}
                if (parent / "memory.memsw.limit_in_bytes").exists():
                    files["memory.memsw.limit_in_bytes"] = str(value * 2**20)  # no swapping past it either
                limit = f"memory.limit_in_bytes={value} MiB"
            else:
                files, limit = {"pids.max": str(value)}, f"pids.max={value}"
            try:
                got.dirs.append(_make(parent, name, files, pid))
                got.limits.append(limit)
            except OSError:
                continue
    return got if got.dirs else None


def attach(pid: int, name: str, memory_mb: int, max_tasks: int) -> CgroupLimit | None:
    """Put `pid` in a new group named `name` limited to `memory_mb` MiB (0 = no memory limit) and `max_tasks`
    threads and processes; None when this machine or this user offers no writable cgroup."""
    for make in (_v2, _v1):
        try:
            found = make(pid, name, memory_mb, max_tasks)
        except OSError:
            found = None
        if found is not None:
            return found
    return None


def available() -> str:
    """What a host here would get, as text (for `check --explain`), without creating anything."""
    kinds = sorted({fstype for _, fstype, _ in _mounts()})
    return ", ".join(kinds) or "no cgroup file system mounted"

