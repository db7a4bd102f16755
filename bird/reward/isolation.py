"""OS isolation of the reward worker: the layers it applies to itself before any untrusted code is compiled,
and the host's own hardening. Each layer reports whether it is active; none is skipped silently.

Order matters: namespaces first (unshare(CLONE_NEWUSER) needs a single-threaded process), then the language's
modules are imported (after the uid drop the Python installation may be unreadable), then limits, uid drop,
no_new_privs, Landlock and last seccomp (which forbids the syscalls the earlier steps use).
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

from bird.reward import cgroups, landlock, seccomp_policy

__all__ = ["IsolationConfig", "Layer", "LAYERS", "STEPS", "SANDBOX_UID", "CPU_BUDGET_S", "apply", "arm_cpu_limit",
           "cpu_budget", "drop_identity", "harden_host", "limit_process", "read_paths_for"]

SANDBOX_UID = SANDBOX_GID = 65534  # nobody / nogroup: what a root host drops the worker to
CPU_BUDGET_S = 3600  # hard RLIMIT_CPU over a worker's life; the soft limit is re-armed per call
LAYERS = ("network_namespace", "resource_limits", "empty_workdir", "unprivileged_user", "non_dumpable",
          "parent_death_signal", "no_new_privs", "landlock", "seccomp")  # in the order they are applied
SYSTEM_LIBRARY_PATHS = ("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/etc/ld.so.cache")

_STDLIB_DIRS = (os.path.dirname(os.__file__), str(sysconfig.get_config_var("DESTSHARED") or ""))  # read at import
_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS = 1, 4, 38
_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class IsolationConfig:
    """What the host asks of one isolated process (a reward worker, the JAX trainer, an artefact inspector).

    :param memory_mb: address-space limit (RLIMIT_AS); 0 = none (a GPU process: CUDA reserves far more address
        space than it uses, so a cgroup memory limit is its only memory limit).
    :param call_timeout_s: per-call limit; the CPU soft limit is armed from it.
    :param host_pid: the parent; the worker exits if it is not its parent (the parent died first).
    :param threads: the language needs threads after start-up (RLIMIT_NPROC then cannot be 0).
    :param read_modules: modules imported before the uid drop and the filters; their packages stay readable.
    :param preload: more modules imported then, whose files need not stay readable.
    :param extra_syscalls: syscalls the language needs beyond seccomp_policy.BASE_SYSCALLS.
    :param extra_read_paths: paths the language reads after start-up, beyond those of its modules.
    :param device_paths: character devices it may open read-write and ioctl (a GPU's nodes; Landlock decides).
    :param ioctls: (mask, value) pairs of ioctl requests seccomp allows on top of TCGETS/FIONREAD (a GPU driver's).
    :param max_files: RLIMIT_NOFILE.
    :param max_tasks: threads and processes: RLIMIT_NPROC when threads are allowed and the host set no cgroup
        limit (0 = none).
    :param cgroup: the cgroup limits the host put this process under, as text ("" = none).
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
    device_paths: tuple[str, ...] = ()
    ioctls: tuple[tuple[int, int], ...] = ()
    max_files: int = 64
    max_tasks: int = 0
    cgroup: str = ""
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


def limit_process(pid: int, name: str, memory_mb: int, max_tasks: int) -> cgroups.CgroupLimit | None:
    """The host's memory and task limits on an isolated process it just started (before its first request): a
    cgroup of its own where the machine offers one (bird/reward/cgroups.py), named `name`. None when there is none:
    the process's rlimits (IsolationConfig.memory_mb, max_tasks) are then its only limits."""
    return cgroups.attach(pid, name, memory_mb, max_tasks)


# -- the layers, in order ----------------------------------------------------------------------------------------
def _network_namespace(was_root: bool) -> Layer:
    before = os.readlink("/proc/self/ns/net")
    flags = _CLONE_NEWNET if was_root else _CLONE_NEWUSER | _CLONE_NEWNET
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")
    after = os.readlink("/proc/self/ns/net")
    if after == before:
        raise OSError("unshare returned but the network namespace did not change")
    with open("/proc/self/net/dev") as fh:
        devices = [line.split(":")[0].strip() for line in fh.readlines()[2:]]
    how = "" if was_root else " (inside a new user namespace)"
    return Layer("network_namespace", True, f"new network namespace{how}; interfaces {devices}, all down")


def _resource_limits(cfg: IsolationConfig) -> Layer:
    limits = {
        resource.RLIMIT_FSIZE: 0,  # no file may grow
        resource.RLIMIT_CORE: 0,
        resource.RLIMIT_NOFILE: cfg.max_files,
    }
    if cfg.memory_mb:
        limits[resource.RLIMIT_AS] = cfg.memory_mb * 2**20
    if not cfg.threads:
        limits[resource.RLIMIT_NPROC] = 0  # no new process or thread (root ignores it: the uid drop comes next)
    elif cfg.max_tasks and not cfg.cgroup:  # RLIMIT_NPROC counts every task of a uid: allow max_tasks more than now
        limits[resource.RLIMIT_NPROC] = _tasks_of(_final_uid(cfg)) + cfg.max_tasks
    for res, value in limits.items():
        resource.setrlimit(res, (value, value))
    budget = cpu_budget(cfg.cpu_budget_s) if cfg.cpu_budget_s else 0
    if budget:
        resource.setrlimit(resource.RLIMIT_CPU, (budget, budget))
        arm_cpu_limit(cfg.call_timeout_s)
    if not cfg.threads:
        tasks = "RLIMIT_NPROC=0"
    elif cfg.cgroup:
        tasks = f"tasks and memory limited by the host's cgroup ({cfg.cgroup})"
    elif cfg.max_tasks:
        tasks = (f"RLIMIT_NPROC={limits[resource.RLIMIT_NPROC]} (the tasks its uid had plus {cfg.max_tasks}: a limit "
                 "over the uid, not this process; seccomp denies processes)")
    else:
        tasks = "RLIMIT_NPROC not set (threads needed; seccomp denies processes)"
    memory = f"RLIMIT_AS={cfg.memory_mb} MiB" if cfg.memory_mb else "no RLIMIT_AS (a GPU process)"
    cpu = (f"RLIMIT_CPU per call {math.ceil(cfg.call_timeout_s) + 1} s (life {budget} s)" if budget
           else "no RLIMIT_CPU (the host's wall-clock watchdog)")
    bounded = not cfg.threads or bool(cfg.cgroup) or bool(cfg.max_tasks)
    return Layer("resource_limits", bounded and bool(cfg.memory_mb or cfg.cgroup),
                 f"{memory}, RLIMIT_FSIZE=0, {cpu}, {tasks}, RLIMIT_NOFILE={cfg.max_files}, RLIMIT_CORE=0")


def _final_uid(cfg: IsolationConfig) -> int:
    """The uid this process runs as once every layer is on."""
    return SANDBOX_UID if os.geteuid() == 0 else os.geteuid()


def _tasks_of(uid: int) -> int:
    """Threads and processes of real uid `uid` on this machine now (what RLIMIT_NPROC counts), from /proc/*/status
    (a non-dumpable process's /proc directory belongs to root, its status line does not lie)."""
    count = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as fh:
                fields = dict(line.split(":", 1) for line in fh if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                count += int(fields["Threads"])
        except (OSError, KeyError, ValueError):
            continue
    return count


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
    return Layer("empty_workdir", True, f"cwd {cwd} (empty, made by the host for this worker)")


def _drop_capabilities() -> None:
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()  # _LINUX_CAPABILITY_VERSION_3: two 32-bit words
    _check(_libc.capset(ctypes.byref(header), data), "capset")


def _capabilities() -> tuple[int, int]:
    """(effective, permitted) capability sets of the calling thread, from capget."""
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()
    _check(_libc.capget(ctypes.byref(header), data), "capget")
    return (data[0].effective | data[1].effective << 32, data[0].permitted | data[1].permitted << 32)


def _to_sandbox_uid() -> str:
    os.setgroups([])  # glibc applies each of these to every thread of the process
    os.setresgid(SANDBOX_GID, SANDBOX_GID, SANDBOX_GID)
    os.setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
    if os.getresuid() != (SANDBOX_UID,) * 3 or os.getresgid() != (SANDBOX_GID,) * 3:
        raise OSError("uid/gid did not change")
    return f"dropped from root to uid {SANDBOX_UID} / gid {SANDBOX_GID}, no supplementary groups"


def _unprivileged_user(was_root: bool, defer: bool = False) -> Layer:
    if was_root and defer:
        return Layer("unprivileged_user", False, "deferred: root inside the other layers until its trusted code is "
                                                 "loaded, then dropped before it receives any artefact")
    if was_root:
        how = _to_sandbox_uid()
    else:
        _drop_capabilities()  # the capabilities it holds inside its own user namespace
        how = "already an unprivileged user; capabilities in its user namespace dropped"
    if _capabilities() != (0, 0):
        raise OSError("capabilities remain after the drop")
    return Layer("unprivileged_user", True, how + "; no capabilities")


def drop_identity(cfg: IsolationConfig) -> Layer:
    """The deferred uid drop of a root process (`defer_uid_drop`), with every thread; then the parent-death signal
    and non-dumpability again (a credential change clears the one and may reset the other)."""
    if not (cfg.defer_uid_drop and os.geteuid() == 0 and os.getresuid() == (0, 0, 0)):
        raise OSError("drop_identity is for a root process that deferred its uid drop")
    how = _to_sandbox_uid()
    if _capabilities() != (0, 0):
        raise OSError("capabilities remain after the drop")
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    _prctl(_PR_SET_DUMPABLE, 0)
    if os.getppid() != cfg.host_pid:
        os._exit(70)
    seccomp_policy.seal()  # from here on no set*id, no dumpability or parent-death change
    return Layer("unprivileged_user", True, how + " (after loading its trusted code); no capabilities; set*id, "
                                                  "PR_SET_DUMPABLE and PR_SET_PDEATHSIG sealed by a second filter")


def _non_dumpable() -> Layer:
    _prctl(_PR_SET_DUMPABLE, 0)
    return Layer("non_dumpable", True, "PR_SET_DUMPABLE=0 here; the host and training processes set it too")


def _parent_death_signal(host_pid: int) -> Layer:
    _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # after the uid change, which clears it
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
    extra = cfg.extra_syscalls + (_DEFERRED_DROP_SYSCALLS if cfg.defer_uid_drop and was_root else ())
    n = seccomp_policy.install(cfg.threads, extra, cfg.ioctls, device_opens=bool(cfg.device_paths),
                               deferred_drop=cfg.defer_uid_drop and was_root)
    threads = "threads allowed (clone with CLONE_THREAD only)" if cfg.threads else "no clone"
    opens = "read-only open (read-write without create/truncate/append: device nodes)" if cfg.device_paths \
        else "read-only open"
    ioctls = f", {len(cfg.ioctls)} ioctl request patterns of the device driver" if cfg.ioctls else ""
    drop = "; set*id until the deferred uid drop" if cfg.defer_uid_drop and was_root else ""
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


# name -> step(cfg, was_root); apply() runs them in LAYERS order. Tests run single steps to check one layer alone.
STEPS: dict[str, Callable[[IsolationConfig, bool], Layer]] = {
    "network_namespace": lambda cfg, root: _network_namespace(root),
    "resource_limits": lambda cfg, root: _resource_limits(cfg),
    "empty_workdir": lambda cfg, root: _empty_workdir(),
    "unprivileged_user": lambda cfg, root: _unprivileged_user(root, cfg.defer_uid_drop),
    "non_dumpable": lambda cfg, root: _non_dumpable(),
    "parent_death_signal": lambda cfg, root: _parent_death_signal(cfg.host_pid),
    "no_new_privs": lambda cfg, root: _no_new_privs(),
    "landlock": lambda cfg, root: _landlock(read_paths_for(cfg.read_modules) + list(cfg.extra_read_paths),
                                            cfg.device_paths),
    "seccomp": lambda cfg, root: _seccomp(cfg, root),
}


def apply(cfg: IsolationConfig) -> list[Layer]:
    """Apply every layer to this process, in order; return one Layer per name in LAYERS (inactive ones say why)."""
    was_root = os.geteuid() == 0
    layers: list[Layer] = []
    for name in LAYERS:
        if name == "resource_limits":  # after the namespaces, before the uid drop and the filters
            for module in cfg.read_modules + cfg.preload:
                importlib.import_module(module)
            try:
                seccomp_policy.load_library()
            except Exception:  # noqa: BLE001 - reported by the seccomp step
                pass
        if name == "seccomp" and cfg.device_paths and not any(x.name == "landlock" and x.active for x in layers):
            cfg = dataclasses.replace(cfg, device_paths=())  # read-write opens only where Landlock picks the files
        try:
            layers.append(STEPS[name](cfg, was_root))
        except Exception as exc:  # noqa: BLE001 - an unavailable layer is reported, never silently skipped
            layers.append(Layer(name, False, f"not applied: {type(exc).__name__}: {exc}"))
    return layers
