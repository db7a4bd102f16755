"""Killing an in-process search at a chosen event, and keeping a copy of its run directory as a kill would leave it
(the resume tests: tests/test_resume_methods.py, tests/observe/test_tracker_resume.py)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

# The co-evolving method whose shared smoke search is copied in iteration 1, right after its subtask revision (the one
# revision a two-iteration search makes): its resume redoes the whole search, so one method stands for rda, era_u and
# era_s, which share the revision (the others are copied in iteration 2, which costs less to redo).
REVISION_KILLED = "method=rda"


def killed_late(overrides: tuple[str, ...]):
    """Where a kill leaves the most to rewind: in iteration 2 after select wrote the iteration's records (islands,
    population, critics, the first candidate.json), before its checkpoint; for REVISION_KILLED, in iteration 1 right
    after the subtask revision was appended; a one-iteration search in its final retrain (or, without one, before its
    result is marked completed)."""
    names = ("final_retrain", "search_done", *(("subtasks_revised",) if REVISION_KILLED in overrides else ()))
    return lambda name, fields: (name == "candidate_trained" and str(fields.get("id", "")).startswith("it2-")) or \
        name in names


@contextlib.contextmanager
def copy_at_event(when, dest):
    """While inside: the first event `when(name, fields)` accepts copies the run directory to `dest`, as a SIGKILL at
    that moment would leave it (events are written by the search's main thread; no LLM call or training is in flight
    at these events)."""
    from bird.rundir import RunDir

    original = RunDir.event

    def event(self, name, **fields):
        original(self, name, **fields)
        if not dest.exists() and when(name, fields):
            shutil.copytree(self.root, dest)

    RunDir.event = event
    try:
        yield dest
    finally:
        RunDir.event = original


class Killed(BaseException):
    """Stands for SIGKILL in an in-process search: nothing in the search catches it (it ends the search as
    KeyboardInterrupt would; the run directory is left as the kill left it, then resumed)."""


@contextlib.contextmanager
def kill_at(when):
    """While inside: raise Killed right after the first event `when(name, fields)` accepts has been written (and its
    listeners, the tracker, have seen it); yields a list that holds the event's name once it fired."""
    from bird.rundir import RunDir

    original = RunDir.event
    fired: list[str] = []

    def event(self, name, **fields):
        original(self, name, **fields)
        if not fired and when(name, fields):
            fired.append(name)
            raise Killed(name)

    RunDir.event = event
    try:
        yield fired
    finally:
        RunDir.event = original


def killed_copy_of(run):
    """The copy smoke_run keeps of `run` as a kill late in iteration 2 left it (see killed_late)."""
    return run.with_name(run.name + "-killed-late")




def kill_when(cmd: list[str], run: Path, marker: str, cwd: Path, env: dict[str, str] | None = None) -> None:
    """Start `cmd` (in `cwd`, with `env`), SIGKILL its whole process group as soon as it writes `marker` to
    `run`/events.jsonl (a marker earlier, killed, runs wrote does not count)."""
    log = run / "events.jsonl"
    seen = log.read_text().count(marker) if log.exists() else 0
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.monotonic() + 600
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if log.exists() and log.read_text().count(marker) > seen:
                os.killpg(proc.pid, signal.SIGKILL)
                break
            time.sleep(0.02)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, f"the search ended by itself (rc {proc.returncode})"
