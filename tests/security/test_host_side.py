"""The host's side of the channel, against workers that misbehave on purpose (fake_workers/): every reply frame is
size-checked before it is read, sequenced, decoded as float64 by the host, and every text a program controls comes
back bounded and without control characters. Time-outs and deaths name the limit that fired."""

from __future__ import annotations

import functools
import os
import re
import time
from pathlib import Path

import numpy as np
import pytest

from bird.envs.base import ObsField, ObsIndex
from bird.reward import sandbox
from bird.reward.languages import get_language
from bird.reward.sandbox import RewardProgramError, SandboxedReward
from bird.types import FailureKind

HERE = Path(__file__).resolve().parent
INDEX = ObsIndex((ObsField("x", 0, 1, "position"), ObsField("v", 1, 2, "velocity")), 3)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]")


@pytest.fixture
def fake(monkeypatch):
    """SandboxedReward whose worker is fake_workers.replies (the real layers, then the scenario's reply)."""
    monkeypatch.setattr(sandbox, "WorkerProcess", functools.partial(
        sandbox.WorkerProcess, module="fake_workers.replies", extra_paths=(str(HERE),)))

    def make(scenario: str, **kw) -> SandboxedReward:
        code = f"# scenario: {scenario}\ndef compute_reward(obs, action, next_obs, info):\n    return 0, {{}}\n"
        return SandboxedReward(code, INDEX, **{"call_timeout_s": 2.0, **kw})

    return make


def _call(program: SandboxedReward, b: int = 4, **kw):
    obs = np.zeros((b, 3))
    return program(obs, np.zeros((b, 1)), obs, **kw)


def _failure(program: SandboxedReward, **kw):
    with pytest.raises(RewardProgramError) as err:
        _call(program, **kw)
    program.close()
    return err.value.failure


@pytest.mark.parametrize("scenario, kind, words", [
    ("header_too_large", FailureKind.BAD_OUTPUT, "reply header of 1073741824 bytes"),
    ("header_not_json", FailureKind.BAD_OUTPUT, "not JSON"),
    ("wrong_sequence", FailureKind.BAD_OUTPUT, "out of sequence"),
    ("payload_too_large", FailureKind.BAD_OUTPUT, "payload of 1099511627776 bytes"),
    ("short_payload", FailureKind.BAD_OUTPUT, "wrong size"),
    ("non_finite", FailureKind.NON_FINITE, "reward returned a non-finite value"),
    ("bad_names", FailureKind.BAD_OUTPUT, "is not a Python identifier (it holds ' ')"),
    ("too_many_names", FailureKind.BAD_OUTPUT, "at most 32 components"),
    ("duplicate_names", FailureKind.BAD_OUTPUT, "duplicate component names"),
    ("exit_in_call", FailureKind.RUNTIME_ERROR, "exited (code 3)"),
    ("never_replies", FailureKind.TIMEOUT, "reward program exceeded the per-call time limit (call_timeout_s=2 s"),
    ("deep_json", FailureKind.BAD_OUTPUT, "nested too deeply"),
    ("names_not_list", FailureKind.BAD_OUTPUT, "as a list of names"),
    ("failure_odd_types", FailureKind.RUNTIME_ERROR, '{"a": [1, 2]}'),
    ("ok_not_true", FailureKind.RUNTIME_ERROR, "unknown error"),
])
def test_bad_replies_become_recorded_failures(fake, scenario, kind, words):
    failure = _failure(fake(scenario))
    assert failure.kind == kind and words in failure.reason, failure


def test_the_kernels_cpu_limit_signal_is_named(fake):
    """SIGXCPU from RLIMIT_CPU ends the worker although it is pid 1 of its namespace (the kernel's own signals reach
    a namespace's init; one it sends itself would not), and the host names the limit."""
    failure = _failure(fake("cpu_limit_signal", call_timeout_s=20.0))
    assert failure.kind == FailureKind.TIMEOUT and "the CPU-time limit fired (RLIMIT_CPU" in failure.reason, failure


def test_oversized_payload_is_refused_before_it_is_read(fake):
    program = fake("payload_too_large", call_timeout_s=60.0)
    failure = _failure(program)
    assert failure.kind == FailureKind.BAD_OUTPUT  # refused on the length field: no terabyte read, no time-out
    assert program._worker.proc.returncode is not None  # and the worker is gone


def test_a_worker_that_stops_reading_cannot_hang_the_host(fake):
    """A request larger than the pipe buffer, to a worker that no longer reads: the write has the call's deadline."""
    program = fake("stops_reading", call_timeout_s=1.0)
    failure = _failure(program, b=100_000)  # 2.4 MB of observations
    assert failure.kind == FailureKind.TIMEOUT and "per-call time limit" in failure.reason


def test_texts_from_a_program_are_bounded_and_stripped(fake):
    failure = _failure(fake("hostile_failure"))
    assert failure.kind == FailureKind.RUNTIME_ERROR  # an unknown kind is not taken on trust
    assert len(failure.reason) <= 500 and len(failure.detail) <= 4000
    assert not CONTROL.search(failure.reason) and not CONTROL.search(failure.detail.replace("\n", ""))
    assert failure.reason.startswith("RRR") and "line one\nline two" in failure.detail


def test_debug_keys_that_are_not_ascii_decimals_are_ignored(fake):
    """"²".isdigit() is True but int("²") raises: such keys once broke every call."""
    with fake("debug_not_int") as program:
        _call(program, debug_rows=[0, 2])
        assert program.last_debug == {0: "kept"}


@pytest.mark.parametrize("scenario, words", [("plan_list_string", "plan_list must be a list"),
                                             ("weights_odd", "REWARD_WEIGHTS must be a number")])
def test_bad_load_replies_become_recorded_failures(fake, scenario, words):
    with pytest.raises(RewardProgramError) as err:
        fake(scenario)
    assert err.value.failure.kind == FailureKind.BAD_OUTPUT and words in err.value.failure.reason


@pytest.mark.parametrize("scenario, words", [
    ("jax_trace_names_string", "as a list of names"), ("jax_trace_names_bad", "is not a Python identifier"),
    ("jax_export_names_dict", "as a list of names"), ("jax_export_names_other", "the export names components"),
    ("jax_dry_run_fails", "spun"),
])
def test_trace_and_export_replies_get_the_numpy_paths_name_checks(fake, scenario, words):
    """The jax language's trace and export replies: the same name, count and type checks as a numpy call's."""
    with pytest.raises(RewardProgramError) as err, fake(scenario, language="jax", action_dim=1) as program:
        program.export(64, 5.0)
    assert words in err.value.failure.reason, err.value.failure


def test_debug_text_only_for_rows_asked_and_cleaned(fake):
    with fake("debug_rows") as program:
        _call(program, debug_rows=[0])
        assert program.last_debug == {0: "shown"}


def test_plan_list_is_bounded_and_cleaned(fake):
    with fake("plan_list_clean") as program:
        assert program.plan_list == ["red step"]
    with pytest.raises(RewardProgramError) as err:
        fake("plan_list_flood")
    assert err.value.failure.kind == FailureKind.BAD_OUTPUT and "at most 64" in err.value.failure.reason


def test_close_kills_the_whole_process_group(tmp_path):
    worker = sandbox.WorkerProcess(get_language("numpy"), 1024, 2.0, module="fake_workers.forking",
                                   extra_paths=(str(HERE),))
    pgid = worker.proc.pid
    members = [p for p in _pids() if _pgid(p) == pgid]
    assert len(members) == 4  # the worker, the child it left behind, its pid namespace's init and worker
    workdir = Path(worker.workdir)
    assert workdir.is_dir() and not any(workdir.iterdir()) and workdir.stat().st_mode & 0o777 == 0o700
    worker.close()
    deadline = time.monotonic() + 60  # a wait for the reaper, not a speed check
    while any(_pgid(p) == pgid for p in _pids()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in _pids() if _pgid(p) == pgid]
    assert not workdir.exists()


def _pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _pgid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[2])


_SUBREAPER_HOST = """
import ctypes, json, os, sys, time
sys.path[:0] = {paths!r}
from bird.reward.languages import get_language
from bird.reward.sandbox import WorkerProcess
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of its descendants come back to it
for _ in range(4):
    WorkerProcess(get_language("numpy"), 1024, 5.0).close()
time.sleep(0.5)
children = open(f"/proc/self/task/{{os.getpid()}}/children").read().split()
print(json.dumps(children))
"""


def test_closing_a_worker_leaves_nothing_for_a_subreaper_host():
    """A host that is pid 1 of a container or a subreaper inherits every orphan: close() kills the worker's pid
    namespace first, so its outer process reaps it and nothing is orphaned (killing the whole group at once left a
    zombie per worker)."""
    import json
    import subprocess
    import sys

    script = _SUBREAPER_HOST.format(paths=[str(HERE.parents[1]), *sys.path])
    out = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=300, cwd="/tmp")
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.splitlines()[-1]) == []


def test_a_worker_that_cannot_read_what_it_needs_refuses_at_start_up(tmp_path):
    """As root, a path the worker needs that its uid cannot read (here a 0700 directory bound into its tree) stops
    it at start-up with what to change: SandboxSetupError, never a module error at a later import."""
    if os.geteuid() != 0:
        pytest.skip("the uid drop that makes a path unreadable happens when bird runs as root")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    (private / "needed.py").write_text("X = 1\n")
    tmp_path.chmod(0o755)
    (tmp_path / "unreadable_worker.py").write_text(
        "import dataclasses\nfrom bird.reward import languages, worker\n"
        f"languages.LANGUAGES['numpy'] = dataclasses.replace(languages.NUMPY, extra_read_paths=({str(private)!r},))\n"
        "main = worker.main\n")
    with pytest.raises(sandbox.SandboxSetupError) as err:
        sandbox.WorkerProcess(get_language("numpy"), 1024, 5.0, module="unreadable_worker",
                              extra_paths=(str(tmp_path),))
    message = str(err.value)
    assert f"cannot read {private}" in message and "readable by other users" in message, message
    control = sandbox.WorkerProcess(get_language("numpy"), 1024, 5.0)  # the same worker without that path starts
    control.close()
