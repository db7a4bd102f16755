"""One writer per run directory: an flock on `run.lock`, which records the owner's pid, host and start time.

The lock file is never deleted (deleting a locked file lets two processes lock two different files); a clean
release empties it. A non-empty file whose lock is free was left by a process that died: it is taken over and
the takeover is reported.
"""

from __future__ import annotations

import datetime as dt
import errno
import fcntl
import json
import os
import socket
from pathlib import Path
from typing import Any

from bird.files import open_in_place

__all__ = ["RunLock", "RunLockedError", "LOCK_NAME"]

LOCK_NAME = "run.lock"


class RunLockedError(RuntimeError):
    """Another live process owns the run directory."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _describe(owner: dict[str, Any]) -> str:
    return f"pid {owner.get('pid')} on host {owner.get('host')} (since {owner.get('since')})"


class RunLock:
    """`with RunLock(dir) as lock:` holds the directory; `lock.takeover` says whose stale lock was taken."""

    def __init__(self, root: Path) -> None:
        self.path = Path(root) / LOCK_NAME
        self.takeover: str | None = None
        self._fd: int | None = None

    def _read_owner(self, fd: int) -> dict[str, Any]:
        os.lseek(fd, 0, os.SEEK_SET)
        raw = os.read(fd, 4096)
        try:
            owner = json.loads(raw) if raw.strip() else {}
        except ValueError:
            owner = {"pid": None, "host": None, "since": f"unreadable lock content {raw[:60]!r}"}
        return owner if isinstance(owner, dict) else {}

    def acquire(self) -> RunLock:
        """Take the lock or raise RunLockedError naming the owner."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_in_place(self.path, os.O_RDWR | os.O_CREAT)  # never through a planted link
        host = socket.gethostname()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = self._read_owner(fd)
            os.close(fd)
            raise RunLockedError(f"{self.path.parent} is in use by {_describe(owner)}; one writer per run "
                                 f"directory (wait for it, or stop it first)") from None
        except OSError as exc:  # a filesystem without flock: fall back to the recorded owner
            if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                os.close(fd)
                raise
            owner = self._read_owner(fd)
            if owner.get("host") == host and isinstance(owner.get("pid"), int) and _alive(owner["pid"]) \
                    and owner["pid"] != os.getpid():
                os.close(fd)
                raise RunLockedError(f"{self.path.parent} is in use by {_describe(owner)}") from None
        previous = self._read_owner(fd)
        if previous.get("pid") is not None:
            gone = "no longer running" if previous.get("host") == host and not _alive(int(previous["pid"])) \
                else "its lock was released without a clean exit"
            self.takeover = f"took over the stale lock of {_describe(previous)}: {gone}"
        record = {"pid": os.getpid(), "host": host,
                  "since": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, (json.dumps(record) + "\n").encode())
        os.fsync(fd)
        self._fd = fd
        return self

    def release(self) -> None:
        """Empty the record (a clean exit) and unlock."""
        if self._fd is None:
            return
        try:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
