"""What the suite makes once although pytest-xdist runs it in several worker processes (`make test` runs `-n 2`).

conftest.py, imported first by the controlling process, sets BIRD_TEST_SHARED to a folder every worker inherits.
`once(name, make)` runs `make(folder)` in the first worker that asks, under a lock, and every other worker reads what
it returned (JSON). Without xdist the same code runs in the one process.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ENV = "BIRD_TEST_SHARED"


def make_folder() -> None:
    """The session's shared folder, made by the first process that imports conftest.py (removed at its exit)."""
    if ENV not in os.environ:
        import atexit

        os.environ[ENV] = tempfile.mkdtemp(prefix="bird-tests-shared-")
        atexit.register(shutil.rmtree, os.environ[ENV], True)


def folder() -> Path:
    return Path(os.environ[ENV])


def is_worker() -> bool:
    """True in a pytest-xdist worker (the controlling process runs no test)."""
    return "PYTEST_XDIST_WORKER" in os.environ


def suite_pid() -> int:
    """The process whose end ends the session: the xdist controller (a worker's parent), or this process."""
    return os.getppid() if is_worker() else os.getpid()


@contextlib.contextmanager
def locked(name: str) -> Iterator[None]:
    """An exclusive lock, across the session's processes, named `name`."""
    with open(folder() / f"{name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def key(*parts: str) -> str:
    """A file name standing for these strings."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def once(name: str, make: Callable[[Path], Any]) -> Any:
    """make(empty folder) -> a JSON value, run once per session across workers; each caller gets the value as JSON
    gives it back (the maker too, so every worker sees the same types). A make that raised is run again by the next
    caller, in a fresh folder."""
    out = folder() / "once" / name
    done = out.with_name(name + ".json")
    with locked(f"once-{name}"):
        if not done.exists():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            text = json.dumps(make(out))
            done.with_suffix(".tmp").write_text(text)
            os.replace(done.with_suffix(".tmp"), done)
        return json.loads(done.read_text())
