"""The worker's syscall filter (seccomp, through pyseccomp on the system libseccomp): an allowlist.

Everything not listed fails with EPERM: process creation and exec, sockets, ptrace and process-memory access,
signals to other processes, namespaces, mounts, BPF, io_uring, and every file operation except read-only opens.
`clone` is allowed only for threads (CLONE_THREAD, no namespace flags) and only when the language needs threads;
`clone3` fails with ENOSYS (its flags sit in memory and cannot be filtered) so glibc falls back to `clone`.
"""

from __future__ import annotations

import errno
import os
import resource
from typing import Any

__all__ = ["BASE_SYSCALLS", "install", "seal"]

# Syscalls a Python interpreter running numpy code makes once the modules are imported (checked with strace).
BASE_SYSCALLS = (
    # memory
    "brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "membarrier",
    # reading and inspecting files (opens are filtered separately: read-only only)
    "read", "readv", "pread64", "preadv", "preadv2", "lseek", "close", "close_range", "fstat", "newfstatat",
    "statx", "stat", "lstat", "access", "faccessat", "faccessat2", "getdents64", "readlink", "readlinkat",
    "getcwd", "fcntl", "dup", "dup3", "fadvise64",
    # writing to the fds it already holds (the result pipe, /dev/null)
    "write", "writev", "pwrite64",
    # waiting, time, randomness, identity
    "poll", "ppoll", "select", "pselect6", "futex", "futex_waitv", "sched_yield", "nanosleep", "clock_nanosleep",
    "clock_gettime", "clock_getres", "gettimeofday", "time", "getrandom", "getpid", "gettid", "getppid",
    "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups", "getpgrp", "getpgid",
    "getsid", "uname", "sysinfo", "getrusage", "times", "sched_getaffinity", "getcpu", "getpriority",
    # signals delivered to itself, thread bookkeeping, exit
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigtimedwait", "sigaltstack",
    "set_robust_list", "get_robust_list", "rseq", "set_tid_address", "restart_syscall", "exit", "exit_group",
)

_O_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND | 0o20000000  # last: __O_TMPFILE
_CLONE_THREAD = 0x00010000
_CLONE_NS_FLAGS = (0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
                   | 0x00000080)  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
_CLONE_PROCESS_FLAGS = 0x00008000 | 0x00001000 | 0x00004000  # CLONE_PARENT, CLONE_PIDFD, CLONE_VFORK
_PR_SET_NAME, _PR_GET_NAME, _PR_GET_DUMPABLE, _PR_SET_DUMPABLE, _PR_SET_PDEATHSIG = 15, 16, 3, 4, 1
_TCGETS, _FIONREAD = 0x5401, 0x541B


def load_library() -> Any:
    """pyseccomp (which loads the system libseccomp); imported before the layers that make it unreadable."""
    import pyseccomp

    return pyseccomp


def install(threads: bool, extra_syscalls: tuple[str, ...] = (), ioctls: tuple[tuple[int, int], ...] = (),
            device_opens: bool = False, deferred_drop: bool = False) -> int:
    """Load the filter into this process (all threads). Returns the number of syscalls allowed unconditionally.

    :param threads: allow clone() of threads (never of processes); numpy needs none.
    :param extra_syscalls: syscalls a language needs on top of BASE_SYSCALLS.
    :param ioctls: (mask, value) pairs: ioctl requests with `request & mask == value` are allowed (a GPU driver's).
    :param device_opens: allow read-write opens that create, truncate and append nothing (a GPU's device nodes;
        Landlock then decides which files: it must be active, or every file of the uid is writable).
    :param deferred_drop: a root process that drops its uid later (isolation.drop_identity): it may then set its
        parent-death signal and non-dumpability again (the set*id calls themselves come in `extra_syscalls`).
    """
    sc = load_library()
    filt = sc.SyscallFilter(sc.ERRNO(errno.EPERM))
    filt.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)  # 32-bit and x32 syscall entry points: kill
    filt.set_attr(sc.Attr.CTL_TSYNC, 1)
    names = tuple(dict.fromkeys(BASE_SYSCALLS + tuple(extra_syscalls)))
    allowed = 0
    for name in names:
        try:
            filt.add_rule(sc.ALLOW, name)
            allowed += 1
        except (OSError, ValueError):
            continue  # a syscall this architecture lacks (e.g. legacy stat on arm64)
    # opens: read-only only
    filt.add_rule(sc.ALLOW, "openat", sc.Arg(2, sc.MASKED_EQ, _O_WRITE_FLAGS, 0))
    if device_opens:
        filt.add_rule(sc.ALLOW, "openat", sc.Arg(2, sc.MASKED_EQ, _O_WRITE_FLAGS & ~os.O_RDWR, 0))
    try:
        filt.add_rule(sc.ALLOW, "open", sc.Arg(1, sc.MASKED_EQ, _O_WRITE_FLAGS, 0))
    except OSError:
        pass
    filt.add_rule(sc.ERRNO(errno.ENOSYS), "openat2")  # how-struct in memory: unfilterable; glibc falls back
    # signals: only to itself (Python's raise(), pthread_kill of its own threads)
    pid = os.getpid()
    filt.add_rule(sc.ALLOW, "kill", sc.Arg(0, sc.EQ, pid))
    filt.add_rule(sc.ALLOW, "tgkill", sc.Arg(0, sc.EQ, pid))
    # resource limits: read any, set only its own CPU limit (the worker re-arms it before every call)
    filt.add_rule(sc.ALLOW, "prlimit64", sc.Arg(0, sc.EQ, 0), sc.Arg(2, sc.EQ, 0))
    filt.add_rule(sc.ALLOW, "prlimit64", sc.Arg(0, sc.EQ, 0), sc.Arg(1, sc.EQ, resource.RLIMIT_CPU))
    options = (_PR_SET_NAME, _PR_GET_NAME, _PR_GET_DUMPABLE) + ((_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE)
                                                                if deferred_drop else ())
    for option in options:
        filt.add_rule(sc.ALLOW, "prctl", sc.Arg(0, sc.EQ, option))
    for request in (_TCGETS, _FIONREAD):
        filt.add_rule(sc.ALLOW, "ioctl", sc.Arg(1, sc.EQ, request))
    for mask, value in ioctls:
        filt.add_rule(sc.ALLOW, "ioctl", sc.Arg(1, sc.MASKED_EQ, mask, value))
    filt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    if threads:
        mask = _CLONE_THREAD | _CLONE_NS_FLAGS | _CLONE_PROCESS_FLAGS
        filt.add_rule(sc.ALLOW, "clone", sc.Arg(0, sc.MASKED_EQ, mask, _CLONE_THREAD))
    filt.load()
    return allowed


_SETID = ("setresuid", "setresgid", "setgroups", "setuid", "setgid", "setreuid", "setregid", "setfsuid", "setfsgid",
          "capset", "seccomp")


def seal() -> None:
    """After a deferred uid drop (isolation.drop_identity): a second filter, stacked on the first for every thread,
    that refuses what only the drop needed: the set*id calls, and setting the parent-death signal or dumpability."""
    sc = load_library()
    filt = sc.SyscallFilter(sc.ALLOW)
    filt.set_attr(sc.Attr.CTL_TSYNC, 1)
    filt.set_attr(sc.Attr.CTL_NNP, 0)  # no_new_privs is set already, and the first filter refuses that prctl
    for name in _SETID:
        try:
            filt.add_rule(sc.ERRNO(errno.EPERM), name)
        except (OSError, ValueError):
            continue
    for option in (_PR_SET_DUMPABLE, _PR_SET_PDEATHSIG):
        filt.add_rule(sc.ERRNO(errno.EPERM), "prctl", sc.Arg(0, sc.EQ, option))
    filt.load()
