"""Namespaces for an isolated process (a reward worker, the JAX trainer): its own network, pid and mount namespaces
(inside its own user namespace when the host is not root), and a minimal read-only filesystem tree in place of the
host's. The tree is built the way bubblewrap builds one (`--ro-bind`, `--dev`, `--proc`, then pivot_root; see
containers/bubblewrap bubblewrap.c), here in the process itself: a tmpfs root holding read-only bind mounts of the
paths the process needs, a few device nodes, and a /proc that shows only the new pid namespace.

Process model of the pid namespace: unshare(CLONE_NEWPID) applies to children only, so `enter_pid_namespace` forks.
The process the host started stays outside, closes every descriptor, waits and exits as the worker did (same exit
code or signal), so the host sees one process that behaves as before. Its child is pid 1 (init) of the namespace, a
waiter; init's child, pid 2, is the worker, which goes on with the layers. When init dies the kernel kills
everything left in the namespace.

Kernel references: mount_namespaces(7), pivot_root(2) ("pivot_root(".", ".")"), user_namespaces(7), proc(5).
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import select
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NoReturn

__all__ = ["NamespaceState", "STATE", "unshare", "enter_pid_namespace", "build_tree", "parent_alive", "TreeResult"]

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x10000000, 0x20000000, 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MS_NOATIME, _MS_NODIRATIME, _MS_RELATIME = 1024, 2048, 1 << 21
_ST_TO_MS = {1: _MS_RDONLY, 2: _MS_NOSUID, 4: _MS_NODEV, 8: _MS_NOEXEC, 1024: _MS_NOATIME, 2048: _MS_NODIRATIME,
             4096: _MS_RELATIME}  # statvfs f_flag -> mount flag: flags a user namespace may not drop (bubblewrap)
_MNT_DETACH = 2
_PR_SET_PDEATHSIG, _PR_GET_DUMPABLE, _PR_SET_DUMPABLE = 1, 3, 4
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "arm64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
DEVICES = ("null", "zero", "full", "random", "urandom")  # /dev in the tree (read-only)

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.syscall.restype = ctypes.c_long


@dataclass
class NamespaceState:
    """What this process has entered so far (one per process; a forked pid-namespace child inherits it)."""

    user: bool = False  # inside a user namespace of its own (hosts that are not root)
    pid: bool = False  # the worker of a new pid namespace (pid 2; init is its parent)
    outer_pid: int = 0  # the host-visible pid of the process the host started (the outer waiter once forked)


STATE = NamespaceState()


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def unshare(flags: int) -> str:
    """unshare(flags). A process that is not root enters a user namespace of its own first (identity uid/gid map,
    setgroups denied), where it may create the others. Returns how, for the layer's report."""
    if os.geteuid() != 0 and not STATE.user:
        uid, gid = os.geteuid(), os.getegid()
        _check(_libc.unshare(ctypes.c_int(flags | CLONE_NEWUSER)), "unshare")
        STATE.user = True
        dumpable = _libc.prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0)
        _libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # /proc/self is its own to write only while dumpable
        try:
            _write("/proc/self/setgroups", "deny")
            _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
            _write("/proc/self/gid_map", f"{gid} {gid} 1\n")
        finally:
            _libc.prctl(_PR_SET_DUMPABLE, dumpable, 0, 0, 0)
        return " (inside a new user namespace)"
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")
    return ""


# -- pid namespace ------------------------------------------------------------------------------------------------
def enter_pid_namespace(host_pid: int) -> None:
    """unshare(CLONE_NEWPID) and fork twice: returns in the worker, pid 2 of the new namespace.

    The process the host started stays outside, waits and exits as the worker did. Its child is pid 1 (init) of the
    namespace, a waiter that reaps; the worker is init's child and not init itself, because init ignores every
    signal it has no handler for, even the kernel's SIGXCPU from RLIMIT_CPU. Exit statuses travel up encoded:
    init exits with 128 + the signal that killed the worker, and the outer process dies of that signal."""
    if host_pid and os.getppid() != host_pid:
        os._exit(70)  # the host died before this point: nobody would read our results
    _prctl_pdeathsig()  # this process dies with the host ...
    unshare(CLONE_NEWPID)
    STATE.outer_pid = os.getpid()
    r, w = os.pipe()
    init = os.fork()
    if init:
        os.close(r)
        _wait_and_mirror(init, keep=w)  # ... and init with it (its parent-death signal and this pipe) ...
    os.close(w)
    _prctl_pdeathsig()
    if select.select([r], [], [], 0)[0]:  # the outer process died before the line above
        os._exit(70)
    worker = os.fork()
    if worker:
        _reap_as_init(worker)  # ... and the worker with init: the kernel kills a namespace whose init exits
    os.close(r)
    STATE.pid = True


def _prctl_pdeathsig() -> None:
    _check(_libc.prctl(ctypes.c_int(_PR_SET_PDEATHSIG), ctypes.c_ulong(signal.SIGKILL), ctypes.c_ulong(0),
                       ctypes.c_ulong(0), ctypes.c_ulong(0)), "prctl(PR_SET_PDEATHSIG)")


def _hold_nothing(keep: int = -1) -> None:
    """A waiter holds none of the host's descriptors (stdin, the result pipe): the host sees EOF when the worker
    goes. It is non-dumpable: its /proc entries (/proc/1/root is the host's root) and memory are closed to the
    worker even where no other layer would close them."""
    _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if keep >= 3:
        os.closerange(3, keep)
        os.closerange(keep + 1, limit)
    else:
        os.closerange(3, limit)


def _reap_as_init(worker: int) -> NoReturn:
    """pid 1: reap whatever ends up here; when the worker ends, exit with its status (128 + signal if killed).
    It forked before the tree was built, so its root would be the host's (/proc/1/root, /proc/1/cwd): it confines
    itself to the empty working directory first."""
    _hold_nothing()
    try:
        os.chroot(os.getcwd())
        os.chdir("/")
    except OSError:
        pass  # still non-dumpable, and the worker drops the privileges that could read it anyway
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == worker:
            if os.WIFSIGNALED(status):
                os._exit(128 + os.WTERMSIG(status))
            os._exit(min(os.WEXITSTATUS(status), 127) if os.WIFEXITED(status) else 1)


def _wait_and_mirror(init: int, keep: int) -> NoReturn:
    """The outer process: wait for init, then exit as the worker did (die of its signal)."""
    _hold_nothing(keep)
    _, status = os.waitpid(init, 0)
    code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)
    if code > 128:
        sig = code - 128
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass  # SIGKILL/SIGSTOP cannot be caught anyway
        os.kill(os.getpid(), sig)
    os._exit(min(code, 127))


def parent_alive() -> bool:
    """In the worker of a pid namespace: whether init, its parent, still lives (the kernel would have killed the
    worker with it, but the parent-death signal may have been set just after)."""
    return os.getppid() == 1


# -- the minimal tree -----------------------------------------------------------------------------------------------
@dataclass
class TreeResult:
    bound: list[str]  # host paths bound (read-only unless asked writable)
    devices: list[str]  # device nodes bound
    proc: str  # what /proc is in the tree


def _bytes(text: str | None) -> bytes | None:
    return text.encode() if text is not None else None


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    _check(_libc.mount(_bytes(source), _bytes(target), _bytes(fstype), ctypes.c_ulong(flags), _bytes(data)),
           f"mount {source or ''} on {target}")


def _locked_flags(path: str) -> int:
    """The mount flags of the mount holding `path` that a remount in a user namespace must keep."""
    flags = os.statvfs(path).f_flag
    return sum(ms for st, ms in _ST_TO_MS.items() if flags & st)


def _mirror(path: str, root: str, depth: int = 0) -> str | None:
    """Recreate under `root` the directories and symlinks on the way to host `path`; return its symlink-free host
    path (the one to bind), or None when it does not exist."""
    if depth > 40 or not os.path.lexists(path):
        return None
    parts = [p for p in os.path.normpath(path).split("/") if p]
    cur = "/"
    for i, part in enumerate(parts):
        nxt = os.path.join(cur, part)
        if os.path.islink(nxt):
            target = os.readlink(nxt)
            if not os.path.lexists(root + nxt):
                os.symlink(target, root + nxt)
            resolved = os.path.normpath(os.path.join(cur, target))
            return _mirror(os.path.join(resolved, *parts[i + 1:]), root, depth + 1)
        if i < len(parts) - 1 and not os.path.isdir(root + nxt):
            os.mkdir(root + nxt, 0o755)
        cur = nxt
    return cur


def _bind(real: str, root: str, writable: bool) -> None:
    target = root + real
    if os.path.isdir(real):
        os.makedirs(target, 0o755, exist_ok=True)
    elif not os.path.exists(target):
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o644))
    try:
        _mount(real, target, None, _MS_BIND)
    except OSError:  # a user namespace may bind a tree holding locked mounts only recursively
        _mount(real, target, None, _MS_BIND | _MS_REC)
    if not writable:
        _mount(None, target, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _locked_flags(real))


def _mount_proc(target: str, entries: bool = False) -> str:
    """A /proc of this pid namespace at `target`: process directories only, or also the machine-wide entries
    (`entries`: /proc/cpuinfo, /proc/meminfo, /proc/driver/... for the trainer; Landlock then picks the readable)."""
    os.mkdir(target, 0o555)
    flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    first = ("hidepid=invisible", "its process directories and machine-wide entries") if entries else \
        ("hidepid=invisible,subset=pid", "process directories only (subset=pid)")
    for data, what in (first, (None, "")):
        try:
            _mount("proc", target, "proc", flags, data)
            return f"/proc of the new pid namespace only, {what or 'all entries'}"
        except OSError as exc:
            error = exc
    return f"no /proc ({error.strerror}: the kernel refused a new proc mount)"


def _pivot_root(root: str) -> None:
    nr = _SYS_PIVOT_ROOT.get(platform.machine())
    if nr is None:
        raise OSError(f"pivot_root: syscall number unknown on {platform.machine()}")
    os.chdir(root)
    if _libc.syscall(ctypes.c_long(nr), b".", b".") != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"pivot_root: {os.strerror(err)}")
    _check(_libc.umount2(b".", _MNT_DETACH), "umount2 of the old root")  # the host's tree is gone from here on
    os.chdir("/")


def build_tree(read_paths: Sequence[str], devices: Sequence[str] = (), writable_paths: Sequence[str] = ()) -> TreeResult:
    """Enter a new mount namespace whose root is a read-only tmpfs holding only `read_paths` (read-only),
    `writable_paths` (read-write), /dev/{null,zero,full,random,urandom} plus `devices` (read-write, e.g. the GPU's
    /dev/nvidia*), and /proc when this process is pid 1 of its own pid namespace (then read paths under /proc are
    that /proc's, not binds of the host's). The current directory (an empty
    one the caller made, not "/") holds the new root and is recreated, empty, inside it."""
    cwd = os.getcwd()
    if cwd == "/":
        raise OSError("the working directory must be an empty directory made for this process, not /")
    unshare(CLONE_NEWNS)
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)  # nothing done here propagates to the host
    root = cwd
    _mount("tmpfs", root, "tmpfs", _MS_NOSUID | _MS_NODEV, "mode=0755,size=1m,nr_inodes=8192")
    fresh_proc = [p for p in read_paths if STATE.pid and (p == "/proc" or p.startswith("/proc/"))]  # its own /proc
    reals = {p: _mirror(p, root) for p in list(read_paths) + list(writable_paths) if p not in fresh_proc}
    writable = {reals[p] for p in writable_paths if reals[p]}
    bound: list[str] = []
    for real in sorted({r for r in reals.values() if r}):
        if not any(real.startswith(b.rstrip("/") + "/") for b in bound):  # already visible through a parent
            _bind(real, root, real in writable)
            bound.append(real)
    dev = []
    for host in [f"/dev/{name}" for name in DEVICES if f"/dev/{name}" not in devices] + list(devices):
        if os.path.exists(host) and not os.path.exists(root + host):
            os.makedirs(os.path.dirname(root + host), 0o755, exist_ok=True)
            os.close(os.open(root + host, os.O_WRONLY | os.O_CREAT, 0o644))
            _mount(host, root + host, None, _MS_BIND)
            if host not in devices:
                _mount(None, root + host, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _locked_flags(host))
            dev.append(host)
    entries = any(not p.startswith(("/proc/self", "/proc/thread-self")) for p in fresh_proc)
    proc = _mount_proc(root + "/proc", entries) if STATE.pid else "no /proc (no pid namespace of its own: it would show the host's)"
    os.makedirs(root + cwd, 0o755, exist_ok=True)
    _mount(None, root, None, _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV, "mode=0755")
    _pivot_root(root)
    os.chdir(cwd)
    return TreeResult(bound, dev, proc)
