"""The attack corpus (tests/security/corpus/, escaped_payloads.py) against the sandbox, as root and as an
unprivileged user: every attack is rejected or contained, with no side effect the host can observe, every OS
layer is active, and the canary secret in the host's environment never shows up in any output."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from driver import CORPUS, corpus_meta  # noqa: E402
from escaped_payloads import ATTEMPTS  # noqa: E402

from bird.reward.replies import name_problem  # noqa: E402

PROGRAMS = sorted(p.stem for p in CORPUS.glob("*.py"))
CLASSES = {"module-internals", "frames", "files", "secrets", "network", "processes", "dynamic-attributes",
           "output-conversion", "batch-size", "module-level", "monkeypatch", "resources", "protocol", "metadata",
           "class-machinery"}
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# how the OS may answer an escaped payload: refused (EPERM/EACCES), absent (ENOSYS), a resource refused (EAGAIN), or
# not there in the worker's namespaces (ENOENT: no such file in its tree; ESRCH: no such process in its pid namespace)
STOPPED = {"PermissionError", "OSError", "BlockingIOError", "RuntimeError", "ValueError", "FileNotFoundError",
           "ProcessLookupError"}
# payloads that only the pid and mount namespaces stop (Landlock does not govern stat/readlink, seccomp allows getpgid)
NAMESPACED = {"stat_host_file": 2, "readlink_host_cwd": 2, "stat_host_process": 2, "enumerate_processes": 3,
              "stat_through_init_root": 2, "escape_tree_through_a_descriptor": 9}  # EBADF: no directory left open


def _records(run, name: str) -> list[dict]:
    found = [r for r in run.results if r["name"] == name]
    assert found, f"{run.user}: the driver produced no record for {name} (rc {run.returncode}): {run.stderr[-2000:]}"
    return found


def test_corpus_has_forty_attacks_across_every_class():
    classes = {corpus_meta(CORPUS / f"{name}.py")["class"] for name in PROGRAMS}
    assert len(PROGRAMS) >= 40
    assert classes == CLASSES
    assert all(corpus_meta(CORPUS / f"{n}.py")["expect"] in ("rejected", "contained") for n in PROGRAMS)


def test_driver_finished_and_every_layer_was_active(run):
    assert run.returncode == 0, run.stderr[-3000:]
    started = [r for r in run.results if "inactive_layers" in r]
    assert len(started) > 40
    assert all(r["inactive_layers"] == {} for r in started), [r["inactive_layers"] for r in started][:3]


@pytest.mark.parametrize("name", PROGRAMS)
def test_attack_program_is_rejected_or_contained(run, name):
    meta = corpus_meta(CORPUS / f"{name}.py")
    for rec in _records(run, name):
        assert rec["outcome"] != "host_error", rec.get("host_error")
        assert rec["effects"] == [], f"{rec['mode']}: side effects on the host: {rec['effects']}"
        if rec["mode"] == "full" and meta["expect"] == "rejected":
            assert rec["outcome"] == "rejected", rec["failures"]
            if meta["static-reason"]:  # rejected by the rule the program is about, not by another one
                assert meta["static-reason"] in rec["failures"][0]["reason"], rec["failures"]
        if rec["mode"] == "runtime":  # static checks bypassed: the worker's own walls decide
            assert rec["outcome"] in ("failed", "ran")
            if meta["runtime-reason"]:
                assert any(meta["runtime-reason"] in f["reason"] for f in rec["failures"]), rec["failures"]


@pytest.mark.parametrize("name", sorted(ATTEMPTS))
def test_escaped_payload_is_stopped_by_the_os(run, name):
    (rec,) = _records(run, name)
    assert rec["effects"] == [], rec["effects"]
    if name == "forge_result_frames":
        assert rec["outcome"] == "host_rejected" and rec["failure"]["kind"] == "bad_output", rec
        return
    assert rec["outcome"] == "raised", f"the payload completed: {rec.get('value')}"
    assert rec["error"] in STOPPED, rec  # not an ImportError or NameError: the OS said no
    if name in NAMESPACED:
        assert rec["errno"] == NAMESPACED[name], rec
    elif rec["error"] in ("PermissionError", "OSError", "BlockingIOError", "FileNotFoundError", "ProcessLookupError"):
        assert rec["errno"] in (1, 2, 3, 11, 13, 38), rec  # EPERM, ENOENT, ESRCH, EAGAIN, EACCES, ENOSYS
    if name == "thread_bomb":  # stopped at the worker's own limit (XLA's threads count too), not the machine's
        from bird.reward.isolation import thread_task_limit

        assert rec["language"] == "jax" and rec["error"] == "RuntimeError", rec
        assert int(rec["text"].split()[0]) < thread_task_limit(), rec


def test_canary_never_appears_in_any_output(run, canary):
    for what, text in (("stdout", run.stdout), ("stderr", run.stderr), ("results", run.raw)):
        assert canary not in text, f"{run.user}: the canary secret leaked into the driver's {what}"


def test_messages_from_programs_are_bounded_and_clean(run):
    for rec in run.results:
        for failure in rec.get("failures", []) + ([rec["failure"]] if rec.get("failure") else []):
            assert len(failure["reason"]) <= 500 and len(failure["detail"]) <= 4000
            assert not CONTROL.search(failure["reason"]) and not CONTROL.search(failure["detail"].replace("\n", ""))
        for call in rec.get("calls", []):
            assert not any(name_problem(n) for n in call["names"])
            assert all(not CONTROL.search(v) for v in call["debug"].values())
        assert all(not CONTROL.search(p) and len(p) <= 300 for p in rec.get("plan_list", []))


@pytest.mark.parametrize("name", ["f04_frame_builtins_read_parent_env", "n04_loadtxt_parent_environ",
                                  "r01_memory_bomb"])
def test_check_cli_on_attack_files_never_prints_the_canary(name, canary, tmp_path):
    """`python -m bird.reward check FILE`, as the issue's attacker used it, with the canary in its environment."""
    import json
    import os
    import subprocess

    path = tmp_path / f"{name}.py"
    path.write_text((CORPUS / f"{name}.py").read_text().replace("@SENTINEL@", str(tmp_path)))
    proc = subprocess.run([sys.executable, "-m", "bird.reward", "check", str(path), "env=mujoco/hopper",
                           "verify.memory_mb=1024"], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[2],
                          env={"PATH": os.defpath, "OMP_NUM_THREADS": "1", "OPENAI_API_KEY": canary})
    verdict = json.loads(proc.stdout)
    assert proc.returncode == 1 and verdict["valid"] is False
    assert verdict["failure"]["kind"] == ("rejected" if corpus_meta(path)["expect"] == "rejected" else "runtime_error")
    assert canary not in proc.stdout + proc.stderr
