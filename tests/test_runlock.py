"""One writer per run directory: a second process is refused naming the owner; a stale lock is taken over."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from bird.runlock import LOCK_NAME, RunLock, RunLockedError

ROOT = Path(__file__).resolve().parents[1]


def test_a_second_process_on_a_locked_run_directory_exits_naming_the_owner(tmp_path):
    with RunLock(tmp_path):
        proc = subprocess.run([sys.executable, "-m", "bird", "budget=smoke", "run.progress=false",
                               f"hydra.run.dir={tmp_path}"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert f"in use by pid {os.getpid()} on host {socket.gethostname()}" in proc.stderr
    assert not (tmp_path / "status.json").exists()  # the owner's directory is left alone


def test_the_same_process_cannot_take_a_held_lock_twice(tmp_path):
    with RunLock(tmp_path), pytest.raises(RunLockedError, match=f"pid {os.getpid()}"):
        RunLock(tmp_path).acquire()


def test_a_stale_lock_of_a_dead_process_is_taken_over_and_reported(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / LOCK_NAME).write_text(json.dumps({"pid": dead.pid, "host": socket.gethostname(), "since": "then"}))
    with RunLock(tmp_path) as lock:
        assert lock.takeover == (f"took over the stale lock of pid {dead.pid} on host {socket.gethostname()} "
                                 f"(since then): no longer running")
        assert json.loads((tmp_path / LOCK_NAME).read_text())["pid"] == os.getpid()
    assert (tmp_path / LOCK_NAME).read_text() == ""  # a clean release leaves no owner behind
    with RunLock(tmp_path) as again:
        assert again.takeover is None
