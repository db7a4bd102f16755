"""tools/suite_acct.py: kernel accounting records are read as written, and each process is charged to the test its
worker ran when it started; what left the workers' trees is listed under its oldest ancestor on record."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import pytest

TOOLS = Path(__file__).resolve().parents[1] / "tools"
sys.path.insert(0, str(TOOLS))
import suite_acct  # noqa: E402

WORKER = 100


def _comp(ticks: int) -> int:
    """comp_t of `ticks` (exact for these values: a 13-bit mantissa, a base-8 exponent)."""
    exp = 0
    while ticks >= 1 << 13:
        assert ticks % 8 == 0
        ticks, exp = ticks >> 3, exp + 1
    return exp << 13 | ticks


def _record(pid: int, ppid: int, start: int, user_s: float, sys_s: float, name: bytes, version: int = 3) -> bytes:
    return struct.pack("<BBHIIIIIIf8H16s", 0, version, 0, 0, 0, 0, pid, ppid, start, 30000.0,  # etime: 300 s, in 1/100 s
                       _comp(round(user_s * 100)), _comp(round(sys_s * 100)), 0, 0, 0, 0, 0, 0, name)


RECORDS = [
    _record(201, 200, 1011, 1.5, 0.5, b"bird-worker"),  # started under 200 while test B ran
    _record(200, WORKER, 1001, 1.0, 0.5, b"python"),  # started while test A ran
    _record(301, 300, 1013, 0.25, 0.25, b"python"),  # under an orphan
    _record(300, 1, 1012, 200.0, 50.0, b"python"),  # reparented to init: 250 s (a comp_t exponent of 1)
    _record(WORKER, 7, 990, 9.0, 1.0, b"python"),  # the worker itself: its CPU comes from the tests' logs
]
TESTS = {WORKER: [{"id": "tests/test_a.py::test_a", "pid": WORKER, "t0": 1000.2, "t1": 1009.9, "own": 0.3},
                  {"id": "tests/test_b.py::test_b", "pid": WORKER, "t0": 1010.1, "t1": 1020.0, "own": 0.7}]}


def test_records_are_read_with_their_cpu_start_and_name():
    procs = suite_acct.read_records(b"".join(RECORDS))
    assert [(p.pid, p.ppid, p.start, p.cpu, p.name) for p in procs[:4]] == [
        (201, 200, 1011, 2.0, "bird-worker"), (200, WORKER, 1001, 1.5, "python"), (301, 300, 1013, 0.5, "python"),
        (300, 1, 1012, 250.0, "python")]
    with pytest.raises(ValueError, match="version 2"):
        suite_acct.read_records(_record(1, 0, 0, 0, 0, b"x", version=2))


def test_each_process_is_charged_to_the_test_running_when_it_started():
    per_test, outside = suite_acct.charge(suite_acct.read_records(b"".join(RECORDS)), {WORKER}, TESTS)
    assert dict(per_test) == pytest.approx({"tests/test_a.py::test_a": 0.3 + 1.5, "tests/test_b.py::test_b": 0.7 + 2.0})
    assert dict(outside) == pytest.approx({300: 250.5})


def test_the_report_sums_by_name_module_and_test(tmp_path):
    (tmp_path / "pacct").write_bytes(b"".join(RECORDS))
    (tmp_path / f"tests-{WORKER}.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TESTS[WORKER]))
    text = suite_acct.report(str(tmp_path))
    assert text.splitlines()[0] == ("5 processes, 264.0 s of CPU; under the workers (their own CPU included) 4.5 s, "
                                    "outside them 250.5 s")
    assert "   262.0      4  python" in text and "     2.0      1  bird-worker" in text  # the worker's own record too
    assert "     2.7  tests/test_b.py" in text and "   250.5  300 python 300 s" in text


def test_a_background_runners_jobs_are_charged_to_the_jobs_not_to_the_test_then_running():
    runner = [
        _record(400, WORKER, 1011, 0.5, 0.0, b"python"),  # the runner, started under the worker while test B ran
        _record(402, 400, 1015, 3.0, 1.0, b"python"),  # its second job (started later) ...
        _record(403, 402, 1016, 8.0, 0.0, b"tf_foreach"),  # ... and what that job started
        _record(401, 400, 1012, 2.0, 0.0, b"make"),  # its first job
    ]
    procs = suite_acct.read_records(b"".join(RECORDS + runner))
    per_test, outside = suite_acct.charge(procs, {WORKER}, TESTS, {400: ["brax_envs", "jax_programs", "unstarted"]})
    assert dict(per_test) == pytest.approx({"tests/test_a.py::test_a": 0.3 + 1.5, "tests/test_b.py::test_b": 0.7 + 2.0,
                                            "background job brax_envs": 2.0, "background job jax_programs": 12.0,
                                            "background jobs' runner": 0.5})
    assert dict(outside) == pytest.approx({300: 250.5})
