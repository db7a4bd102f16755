"""OS isolation of an untrusted-code process (the reward worker; the JAX trainer applies the same stack): the layers
it applies to itself before any untrusted code is compiled, and the host's own hardening. Each layer reports
whether it is active; none is skipped silently.

Order matters: namespaces first (unshare(CLONE_NEWUSER) needs a single-threaded process; the pid namespace forks,
bird/reward/namespaces.py), then the language's modules are imported (from the host's filesystem, as the host's
user), then the task limit, the minimal read-only tree (mount namespace), limits, uid drop, no_new_privs, Landlock
and last seccomp (which forbids the syscalls the earlier steps use).
"""

from __future__ import annotations

import ctypes
import dataclasses
import importlib
import math
import os
import resource
import signal
import sysconfig
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from bird.reward import cgroups, landlock, namespaces, seccomp_policy

__all__ = ["IsolationConfig", "Layer", "LAYERS", "STEPS", "WORKER_UID_BASE", "CPU_BUDGET_S", "SetupRefused", "apply",
           "arm_cpu_limit", "cpu_budget", "drop_identity", "harden_host", "limit_tasks", "tasks_fired", "read_paths_for", "refuse_unreadable", "release_tasks",
           "thread_task_limit", "worker_uid"]

# A root host drops each worker to a uid of its own, WORKER_UID_BASE + the host-visible pid of the process it started
# (unique while that process lives; pid_max <= 2**22 keeps it below 0x7A400000): RLIMIT_NPROC then counts per worker,
# and workers cannot signal or read each other by uid. 0x70000000-0x7FFDFFFF is a range systemd leaves unassigned
# (systemd.io/UIDS-GIDS: above the container ranges, below the "foreign" range); the gid is the same number.
WORKER_UID_BASE = 0x7A000000
CPU_BUDGET_S = 3600  # hard RLIMIT_CPU over a worker's life; the soft limit is re-armed per call
LAYERS = ("network_namespace", "pid_namespace", "task_limit", "empty_workdir", "mount_namespace", "resource_limits",
          "unprivileged_user", "non_dumpable", "parent_death_signal", "no_new_privs", "landlock",
          "seccomp")  # in the order they are applied
SYSTEM_LIBRARY_PATHS = ("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/etc/ld.so.cache")

_STDLIB_DIRS = (os.path.dirname(os.__file__), str(sysconfig.get_config_var("DESTSHARED") or ""))  # read at import
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS = 1, 4, 38
_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class IsolationConfig:
    """What the host asks of one worker.

    :param memory_mb: address-space limit (RLIMIT_AS) and the cgroup's memory.max; 0 = no RLIMIT_AS (a GPU
        process: CUDA reserves far more address space than it uses; `cgroup_memory_mb` is then its memory limit).
    :param call_timeout_s: per-call limit; the CPU soft limit is armed from it.
    :param host_pid: the parent; the worker exits if it is not its parent (the parent died first).
    :param threads: the language needs threads after start-up (RLIMIT_NPROC then cannot be 0).
    :param read_modules: modules imported before the uid drop and the filters; their packages stay readable.
    :param preload: more modules imported then, whose files need not stay readable.
    :param extra_syscalls: syscalls the language needs beyond seccomp_policy.BASE_SYSCALLS.
    :param extra_read_paths: paths the language reads after start-up, beyond those of its modules.
    :param max_tasks: processes + threads allowed (pids.max, RLIMIT_NPROC); None: 1 without threads, else
        thread_task_limit().
    :param devices: device nodes bound read-write into the minimal tree (a GPU's /dev/nvidia*); the reward worker
        needs none.
    :param writable_paths: directories bound read-write into the tree (a trainer's output directory). Only the tree
        makes them writable: Landlock and seccomp still refuse writes until the caller extends them.
    :param cgroup: which cgroup of its own to make where one can be made: "v2" (pids.max, memory.max; the default),
        "any" (also the pids controller of a cgroup v1 hierarchy), "off".
    :param cgroup_memory_mb: the cgroup's memory.max when it differs from memory_mb (None: memory_mb).
    :param ioctls: (mask, value) pairs of ioctl requests seccomp allows on top of TCGETS/FIONREAD (a GPU driver's).
    :param max_files: RLIMIT_NOFILE.
    :param defer_uid_drop: a root process stays root (inside every other layer) until `drop_identity()`, so that
        it can still read an installation only root can reach while it loads trusted code (the trainer).
    :param cpu_budget_s: hard RLIMIT_CPU over the process's life (capped by the host's own); 0 = no CPU limit (a
        long training, bounded by the host's wall-clock watchdog instead).
    """

    memory_mb: int
    call_timeout_s: float
    host_pid: int
    threads: bool = False
    read_modules: tuple[str, ...] = ()
    preload: tuple[str, ...] = ()
    extra_syscalls: tuple[str, ...] = ()
    extra_read_paths: tuple[str, ...] = ()
    max_tasks: int | None = None
    devices: tuple[str, ...] = ()
    writable_paths: tuple[str, ...] = ()
    cgroup: str = "v2"
    cgroup_memory_mb: int | None = None
    ioctls: tuple[tuple[int, int], ...] = ()
    max_files: int = 64
    defer_uid_drop: bool = False
    cpu_budget_s: int = CPU_BUDGET_S

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, object]) -> IsolationConfig:
        """The inverse of to_json (lists back to tuples); unknown keys are an error."""
        fields = {f.name for f in dataclasses.fields(cls)}
        if set(data) - fields:
            raise ValueError(f"unknown isolation settings {sorted(set(data) - fields)} (known: {sorted(fields)})")
        tuples = {k: tuple(tuple(x) if isinstance(x, list) else x for x in v) for k, v in data.items()
                  if isinstance(v, list)}
        return cls(**{**data, **tuples})  # type: ignore[arg-type]


class SetupRefused(RuntimeError):
    """The process cannot run safely here (what it must read is unreadable to its identity); the message says what
    to change. Raised out of apply(), never reported as an inactive layer."""


@dataclass
class Layer:
    name: str
    active: bool
    detail: str

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _prctl(option: int, arg: int) -> None:
    _check(_libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0),
                       ctypes.c_ulong(0)), f"prctl({option})")


def harden_host() -> None:
    """Mark this process non-dumpable: a same-user process can no longer read its /proc/<pid>/environ or mem,
    nor ptrace it. Every process that starts reward workers calls it (the parent and every training process)."""
    _prctl(_PR_SET_DUMPABLE, 0)


def _status_field(name: str) -> str:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(name + ":"):
                return line.split(":", 1)[1].strip()
    return ""


# -- the layers, in order ----------------------------------------------------------------------------------------
def _network_namespace() -> Layer:
    before = os.readlink("/proc/self/ns/net")
    how = namespaces.unshare(namespaces.CLONE_NEWNET)
    after = os.readlink("/proc/self/ns/net")
    if after == before:
        raise OSError("unshare returned but the network namespace did not change")
    with open("/proc/self/net/dev") as fh:
        devices = [line.split(":")[0].strip() for line in fh.readlines()[2:]]
    return Layer("network_namespace", True, f"new network namespace{how}; interfaces {devices}, all down")


def _pid_namespace(cfg: IsolationConfig) -> Layer:
    namespaces.enter_pid_namespace(cfg.host_pid)  # returns in the worker only
    return Layer("pid_namespace", True, f"pid {os.getpid()} of a new pid namespace under a waiting init: no host "
                                        "process can be seen, signalled or probed by pid; whatever it starts dies "
                                        "with it; the process the host started waits outside and exits as it does")


def thread_task_limit() -> int:
    """Processes + threads for a language that needs threads: XLA sizes its pools by the CPU count."""
    return 64 + 4 * (os.cpu_count() or 1)


def worker_uid() -> int:
    """The uid (and gid) a root host drops this worker to: its own, so that RLIMIT_NPROC counts it alone."""
    return WORKER_UID_BASE + (namespaces.STATE.outer_pid or os.getpid())


def limit_tasks(max_tasks: int, memory_mb: int | None = None, cgroup: str = "v2") -> Layer:
    """At most `max_tasks` processes + threads for this process and everything it starts, counted for it alone, so a
    thread bomb stops at its own limit and never exhausts the machine's pids. Two mechanisms, each reported:
    a cgroup of its own (pids.max; memory.max on cgroup v2) where one can be made under this process's cgroup, and
    RLIMIT_NPROC, which the kernel counts per uid in a user namespace: per worker because a root host gives each
    worker its own uid (worker_uid(), applied by the uid drop) and an unprivileged host its own user namespace.
    Called by every isolated process (the reward worker through apply(), the JAX trainer).

    :param cgroup: "v2" (the default), "any" (a v1 pids hierarchy too: moving a process between v1 cgroups costs
        tens of milliseconds under load, and RLIMIT_NPROC per worker already holds there) or "off"."""
    if cgroup not in cgroups.KINDS:
        raise ValueError(f"cgroup={cgroup!r}: expected one of {sorted(cgroups.KINDS)}")
    parts = []
    if cgroup != "off":
        try:
            parts.append(cgroups.enter(cgroups.PREFIX + str(namespaces.STATE.outer_pid or os.getpid()), max_tasks,
                                       memory_mb * 2**20 if memory_mb else None, v1=cgroup == "any"))
        except OSError as exc:
            parts.append(f"no cgroup ({exc})")
    per_worker = os.geteuid() == 0 or namespaces.STATE.user
    nproc = 0 if max_tasks <= 1 else max_tasks
    if per_worker or nproc == 0:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
        whose = (f"uid {worker_uid()} (this worker's own)" if os.geteuid() == 0
                 else "this worker's own user namespace" if namespaces.STATE.user else "this user")
        parts.append(f"RLIMIT_NPROC={nproc} counted for {whose}")
    else:
        parts.append("RLIMIT_NPROC not set: without a user namespace of its own it would count all of this user's "
                     "processes")
    active = any(p.startswith("cgroup") for p in parts) or per_worker or nproc == 0
    return Layer("task_limit", active, f"at most {max(max_tasks, 1)} task(s): " + "; ".join(parts))


def tasks_fired(outer_pid: int) -> str:
    """Host side, before release_tasks: which limit of the worker's cgroup fired ("" when none or no cgroup)."""
    return cgroups.fired(cgroups.PREFIX + str(outer_pid))


def release_tasks(outer_pid: int) -> None:
    """Host side, once the worker `outer_pid` is reaped: remove the cgroup it made, if any."""
    cgroups.remove(cgroups.PREFIX + str(outer_pid))


def _mount_namespace(cfg: IsolationConfig) -> Layer:
    tree = namespaces.build_tree(_read_paths(cfg), cfg.devices, cfg.writable_paths)
    return Layer("mount_namespace", True,
                 f"new mount namespace; root is a read-only tmpfs with {len(tree.bound)} read-only binds "
                 f"({', '.join(tree.bound)}), devices {', '.join(tree.devices)}, {tree.proc}; the host's other "
                 "files do not exist here (stat/readlink see nothing)")


def _resource_limits(cfg: IsolationConfig) -> Layer:
    limits = {
        resource.RLIMIT_FSIZE: 0,  # no file may grow
        resource.RLIMIT_CORE: 0,
        resource.RLIMIT_NOFILE: cfg.max_files,
    }
    if cfg.memory_mb:
        limits[resource.RLIMIT_AS] = cfg.memory_mb * 2**20
    for res, value in limits.items():
        resource.setrlimit(res, (value, value))
    budget = cpu_budget(cfg.cpu_budget_s) if cfg.cpu_budget_s else 0
    if budget:
        resource.setrlimit(resource.RLIMIT_CPU, (budget, budget))
        arm_cpu_limit(cfg.call_timeout_s)
    memory = f"RLIMIT_AS={cfg.memory_mb} MiB" if cfg.memory_mb else "no RLIMIT_AS (a GPU process: the cgroup's memory.max)"
    cpu = (f"RLIMIT_CPU per call {math.ceil(cfg.call_timeout_s) + 1} s (life {budget} s)" if budget
           else "no RLIMIT_CPU (the host's wall-clock watchdog)")
    return Layer("resource_limits", bool(cfg.memory_mb or cfg.cgroup_memory_mb),
                 f"{memory}, RLIMIT_FSIZE=0, {cpu}, RLIMIT_NOFILE={cfg.max_files}, RLIMIT_CORE=0 (processes and "
                 "threads: task_limit)")


def cpu_budget(budget: int = CPU_BUDGET_S) -> int:
    """The hard RLIMIT_CPU a worker gets: `budget`, or the lower hard limit this process already runs under
    (a batch system's `ulimit -t`), which it could not raise."""
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    return budget if hard == resource.RLIM_INFINITY else min(budget, hard)


def arm_cpu_limit(seconds: float) -> None:
    """Soft RLIMIT_CPU = CPU used so far + the per-call limit + 1 s: SIGXCPU ends a call that spins past it."""
    soft = math.ceil(time.process_time()) + math.ceil(seconds) + 1
    hard = resource.getrlimit(resource.RLIMIT_CPU)[1]
    resource.setrlimit(resource.RLIMIT_CPU, (min(soft, hard), hard))


def _empty_workdir() -> Layer:
    cwd = os.getcwd()
    if os.listdir(cwd):
        raise OSError(f"working directory {cwd} is not empty")
    return Layer("empty_workdir", True, f"cwd {cwd} (empty, made by the host for this worker; recreated empty and "
                                        "read-only in the minimal tree)")


def _drop_capabilities() -> None:
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3: two 32-bit words
    _check(_libc.capset(ctypes.byref(header), data), "capset")


def _capabilities() -> tuple[int, int]:
    """(effective, permitted) capability sets of the calling thread, from capget (no /proc needed)."""
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()
    _check(_libc.capget(ctypes.byref(header), data), "capget")
    return (data[0].effective | data[1].effective << 32, data[0].permitted | data[1].permitted << 32)


def _to_worker_uid() -> str:
    uid = worker_uid()
    os.setgroups([])  # glibc applies each of these to every thread of the process
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.getresuid() != (uid,) * 3 or os.getresgid() != (uid,) * 3:
        raise OSError("uid/gid did not change")
    return f"dropped from root to uid/gid {uid} (this worker's own), no supplementary groups"


def _unprivileged_user(was_root: bool, defer: bool = False) -> Layer:
    if was_root and defer:
        return Layer("unprivileged_user", False, "deferred: root inside the other layers until its trusted code is "
                                                 "loaded, then dropped before it receives any artefact")
    if was_root:
        how = _to_worker_uid()
    else:
        _drop_capabilities()  # the capabilities it holds inside its own user namespace
        how = "already an unprivileged user; capabilities in its user namespace dropped"
    if int(_status_field("CapEff") or "1", 16) != 0 or int(_status_field("CapPrm") or "1", 16) != 0:
        raise OSError("capabilities remain after the drop")
    return Layer("unprivileged_user", True, how + "; no capabilities")


def drop_identity(cfg: IsolationConfig) -> Layer:
    """The deferred uid drop of a root process (`defer_uid_drop`), with every thread; then the parent-death signal
    and non-dumpability again (a credential change clears the one and may reset the other)."""
    if not (cfg.defer_uid_drop and os.geteuid() == 0 and os.getresuid() == (0, 0, 0)):
        raise OSError("drop_identity is for a root process that deferred its uid drop")
    how = _to_worker_uid()
    if _capabilities() != (0, 0):
        raise OSError("capabilities remain after the drop")
    _parent_death_signal(cfg.host_pid)
    _non_dumpable()
    seccomp_policy.seal()  # from here on no set*id, no dumpability or parent-death change
    return Layer("unprivileged_user", True, how + " (after loading its trusted code); no capabilities; set*id, "
                                                  "PR_SET_DUMPABLE and PR_SET_PDEATHSIG sealed by a second filter")


def refuse_unreadable(paths: Sequence[str]) -> None:
    """After the uid drop: every path the process reads later must be readable now, or start-up fails with what to
    change (never a module error later). Checks each path and, for the Python packages, their first-level entries
    (an install made under umask 077 is unreadable throughout); symlinks are checked where they lead."""
    for path in paths:
        entries = [path]
        if path not in SYSTEM_LIBRARY_PATHS and os.path.isdir(path) and os.access(path, os.R_OK | os.X_OK):
            entries += [e.path for e in sorted(os.scandir(path), key=lambda e: e.name)[:500] if not e.is_symlink()]
        for entry in entries:
            if not os.access(entry, os.R_OK | (os.X_OK if os.path.isdir(entry) else 0)):
                blocker = entry
                while os.path.dirname(blocker) != blocker and not os.access(os.path.dirname(blocker), os.X_OK):
                    blocker = os.path.dirname(blocker)
                raise SetupRefused(
                    f"the isolated process runs as uid {os.getuid()} and cannot read {entry} (blocked at {blocker}). "
                    "Make the Python installation and the packages readable by other users (e.g. chmod o+rX on the "
                    "directories above them and chmod -R o+rX on the install), or run bird as a normal user; a "
                    "kernel that allows mount namespaces avoids this for directories above them (python -m "
                    "bird.reward check --explain)")


def _non_dumpable() -> Layer:
    _prctl(_PR_SET_DUMPABLE, 0)
    return Layer("non_dumpable", True, "PR_SET_DUMPABLE=0 here; the host and training processes set it too")


def _parent_death_signal(host_pid: int) -> Layer:
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # after the uid change, which clears it
    if namespaces.STATE.pid:  # its parent is the namespace's init, which dies with the host
        if not namespaces.parent_alive():
            os._exit(70)
        return Layer("parent_death_signal", True, "SIGKILL when the host dies (through the waiters in between)")
    if os.getppid() != host_pid:
        os._exit(70)  # the host died before this point: nobody would read our results
    return Layer("parent_death_signal", True, "SIGKILL when the host dies")


def _no_new_privs() -> Layer:
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    return Layer("no_new_privs", True, "PR_SET_NO_NEW_PRIVS=1")


def _landlock(paths: Sequence[str], devices: Sequence[str] = ()) -> Layer:
    if len(os.listdir("/proc/self/task")) != 1:
        raise OSError("Landlock restricts only the calling thread, and this process has several")
    res = landlock.restrict(list(dict.fromkeys(paths)), list(devices))
    parts = [f"ABI {res.abi}", f"read-only: {', '.join(res.read_paths)}" if res.filesystem else "no filesystem rules",
             *([f"read-write and ioctl: {', '.join(res.device_paths)}"] if res.device_paths else []),
             "TCP bind/connect denied" if res.network else "network rules need ABI 4",
             "signals and abstract unix sockets scoped" if res.scoped else "scoping needs ABI 6"]
    return Layer("landlock", res.filesystem and res.network and res.scoped, "; ".join(parts))


_DEFERRED_DROP_SYSCALLS = ("setresuid", "setresgid", "setgroups", "capget", "seccomp")


def _seccomp(cfg: IsolationConfig, was_root: bool = False) -> Layer:
    deferred = cfg.defer_uid_drop and was_root
    n = seccomp_policy.install(cfg.threads, cfg.extra_syscalls + (_DEFERRED_DROP_SYSCALLS if deferred else ()),
                               cfg.ioctls, device_opens=bool(cfg.devices), deferred_drop=deferred)
    threads = "threads allowed (clone with CLONE_THREAD only)" if cfg.threads else "no clone"
    opens = ("read-only open (read-write without create/truncate/append: device nodes)" if cfg.devices
             else "read-only open")
    ioctls = f", {len(cfg.ioctls)} ioctl request patterns of the device driver" if cfg.ioctls else ""
    drop = "; set*id until the deferred uid drop" if deferred else ""
    return Layer("seccomp", True, f"allowlist of {n} syscalls + {opens}, self-only signals, {threads}{ioctls}; "
                                  f"fork/exec/socket/ptrace/process_vm_* denied; clone3 -> ENOSYS{drop}")


def read_paths_for(modules: Sequence[str]) -> list[str]:
    """The directories a worker may read after start-up: the standard library, the packages of `modules` (and
    their bundled `<pkg>.libs`), and the system library directories."""
    stdlib = list(_STDLIB_DIRS)
    paths = list(stdlib)
    for name in dict.fromkeys(m.split(".")[0] for m in modules):
        where = getattr(importlib.import_module(name), "__file__", None)
        if where is None or os.path.dirname(where) in stdlib:  # built in, or part of the standard library
            continue
        root = os.path.dirname(where) if os.path.basename(where) == "__init__.py" else where
        paths.append(root)
        if os.path.isdir(root + ".libs"):
            paths.append(root + ".libs")
    paths += [p for p in SYSTEM_LIBRARY_PATHS if os.path.exists(p)]
    return [p for p in dict.fromkeys(paths) if p]


def _read_paths(cfg: IsolationConfig) -> list[str]:
    return read_paths_for(cfg.read_modules) + list(cfg.extra_read_paths)


def _cgroup_memory(cfg: IsolationConfig) -> int | None:
    return cfg.cgroup_memory_mb if cfg.cgroup_memory_mb is not None else cfg.memory_mb or None


def _max_tasks(cfg: IsolationConfig) -> int:
    return cfg.max_tasks if cfg.max_tasks is not None else thread_task_limit() if cfg.threads else 1


# name -> step(cfg, was_root); apply() runs them in LAYERS order. Tests run single steps to check one layer alone.
STEPS: dict[str, Callable[[IsolationConfig, bool], Layer]] = {
    "network_namespace": lambda cfg, root: _network_namespace(),
    "pid_namespace": lambda cfg, root: _pid_namespace(cfg),
    "task_limit": lambda cfg, root: limit_tasks(_max_tasks(cfg), _cgroup_memory(cfg), cfg.cgroup),
    "empty_workdir": lambda cfg, root: _empty_workdir(),
    "mount_namespace": lambda cfg, root: _mount_namespace(cfg),
    "resource_limits": lambda cfg, root: _resource_limits(cfg),
    "unprivileged_user": lambda cfg, root: _unprivileged_user(root, cfg.defer_uid_drop),
    "non_dumpable": lambda cfg, root: _non_dumpable(),
    "parent_death_signal": lambda cfg, root: _parent_death_signal(cfg.host_pid),
    "no_new_privs": lambda cfg, root: _no_new_privs(),
    "landlock": lambda cfg, root: _landlock(_read_paths(cfg), cfg.devices),
    "seccomp": lambda cfg, root: _seccomp(cfg, root),
}


def import_modules(cfg: IsolationConfig) -> None:
    """Import what the process needs while the host's filesystem is still there and readable (before the task
    limit, the tree and the uid drop); libseccomp too."""
    for module in cfg.read_modules + cfg.preload:
        importlib.import_module(module)
    try:
        seccomp_policy.load_library()
    except Exception:  # noqa: BLE001 - reported by the seccomp step
        pass


def apply(cfg: IsolationConfig) -> list[Layer]:
    """Apply every layer to this process, in order; return one Layer per name in LAYERS (inactive ones say why).
    Raises SetupRefused when the process could not read what it needs after the uid drop."""
    was_root = os.geteuid() == 0
    namespaces.STATE.outer_pid = namespaces.STATE.outer_pid or os.getpid()
    layers: list[Layer] = []
    needed: list[str] | None = None
    for name in LAYERS:
        if needed is None and name not in ("network_namespace", "pid_namespace"):
            import_modules(cfg)  # after the namespaces (the pid namespace forks), before the tree and the limits
            needed = [p for p in _read_paths(cfg) if os.path.exists(p)]  # seen before the uid drop
        if name == "seccomp" and cfg.devices and not any(x.name == "landlock" and x.active for x in layers):
            cfg = dataclasses.replace(cfg, devices=())  # read-write opens only where Landlock picks the files
        try:
            layers.append(STEPS[name](cfg, was_root))
        except Exception as exc:  # noqa: BLE001 - an unavailable layer is reported, never silently skipped
            layers.append(Layer(name, False, f"not applied: {type(exc).__name__}: {exc}"))
        if name == "unprivileged_user":
            refuse_unreadable(needed or [])  # checked after it
    return layers
