"""Processes that end with the process that started them: a search killed with SIGKILL leaves no fork server,
training worker or compile step behind (docs/architecture.md, "Processes")."""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time

__all__ = ["die_with_parent", "watch_parent"]

_PR_SET_PDEATHSIG = 1


def _kill_self() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def die_with_parent(parent_pid: int) -> None:
    """SIGKILL this process when the thread that started it ends (PR_SET_PDEATHSIG), and now if `parent_pid` is no
    longer its parent (it died before this call). For a process started by a thread that lives as long as its
    process (a fork server's main loop, a call that waits for its child); a process that drops privileges must
    call it again after the uid change, which clears the signal (bird/reward/isolation.py does)."""
    if ctypes.CDLL(None, use_errno=True).prctl(ctypes.c_int(_PR_SET_PDEATHSIG), ctypes.c_ulong(signal.SIGKILL),
                                               ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent_pid:
        _kill_self()


def watch_parent(parent_pid: int, interval_s: float = 0.5) -> threading.Thread:
    """A daemon thread that SIGKILLs this process once `parent_pid` is no longer its parent (the parent died and it
    was re-parented). For a process whose starting thread may end before the parent does (a pool worker is started
    by whichever thread submits), where PR_SET_PDEATHSIG would fire too early; not for a process that forks."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(interval_s)
        _kill_self()

    thread = threading.Thread(target=watch, name="bird-watch-parent", daemon=True)
    thread.start()
    return thread
