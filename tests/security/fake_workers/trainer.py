"""A trainer that applies the real trainer layers, then answers with the scenario its first job's id names
(`candidate_id` = "scenario:NAME"): well-formed runs, malformed frames, wrong values, silence, a crash (in load or in training)."""

from __future__ import annotations

import json
import math
import os
import pickle
import signal
import struct
import sys
import time

from bird.reward import isolation
from bird.reward.worker import Session

SETTINGS = {"steps_per_update": 64, "n_updates": 3}
CHECKPOINT = {"score": 0.1, "quantity": 0.2, "own_return": 1.0, "reference_return": 2.0, "episode_length": 10.0,
              "components": {"a": 0.5}, "eval_own_return": math.nan,
              "eval_reference_return": math.nan}


def _raw(session: Session, data: bytes) -> None:
    os.write(session.result_fd, data)


def main(result_fd: int) -> None:  # noqa: C901 - one branch per scenario
    session = Session(result_fd)
    init, _ = session.recv()
    cfg = isolation.IsolationConfig.from_json(init["isolation"])
    session.send({"ok": True, "layers": [layer.to_json() for layer in isolation.apply(cfg)]})
    header, payload = session.recv()
    jobs, executables = pickle.loads(payload)  # noqa: S301 - from the host: (jobs, the compile step's executables)
    scenario = jobs[0].candidate_id.removeprefix("scenario:")
    drop = [isolation.drop_identity(cfg).to_json()] if cfg.defer_uid_drop and os.geteuid() == 0 else []
    if scenario == "setup_deep_json":
        h = (f'{{"seq": {session.seq}, "ok": true, "rows": ' + "[" * 30000 + "]" * 30000 + "}").encode()
        _raw(session, struct.pack("<I", len(h)) + h + struct.pack("<Q", 0))
        time.sleep(30)
    n = len(jobs)
    if scenario == "setup_refused":
        session.send({"ok": False, "kind": "train_error", "reason": "no such task"})
        return
    settings = {} if scenario == "setup_no_settings" else SETTINGS
    timing = {"compile_s": 1.0, "executables_bytes": len(executables or b"")}
    session.send({"ok": True, "rows": 32, "settings": settings, "timing": timing, "layers": drop,
                  "devices": ["TFRT_CPU_0"]})
    session.recv()  # load
    if scenario == "load_crash":  # the programs arrived: one of them may be the cause
        os.kill(os.getpid(), signal.SIGSEGV)
    if scenario == "load_refused":
        session.send({"ok": False, "kind": "rejected", "reason": "a program holds a host callback"})  # not a group kind
        return
    live = {"load_live_out_of_range": [0, 7], "load_live_twice": [0, 0], "load_live_and_failed": [0],
            "load_none_live": []}.get(scenario, list(range(n)))
    failures = {"load_failure_key": {"²": {"kind": "timeout"}},
                "load_live_and_failed": {"0": {"kind": "rejected", "reason": "bad program"}},
                "load_none_live": {str(i): {"kind": "rejected", "reason": f"bad program {i}"} for i in range(n)},
                }.get(scenario, {})
    session.send({"ok": True, "failures": failures, "live": live})
    session.recv()  # train
    if scenario == "train_never_replies":
        time.sleep(60)
    if scenario == "train_crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if scenario == "train_error_event":
        session.send({"event": "error", "ok": False, "kind": "non_finite", "reason": "NaN in the shared step",
                      "group": True})
        return
    if scenario == "train_unknown_event":
        session.send({"event": "resized", "update": 1})
        return
    for update in range(1, 4 if scenario != "train_update_flood" else 40):
        if scenario == "train_slow":
            time.sleep(5)
        if update in (2, 3) and scenario != "train_update_flood":
            for job in range(n):
                checkpoint = {**CHECKPOINT, "env_steps": update * 64, "score": 0.1 * update + job}
                if scenario == "train_checkpoint_inf":
                    checkpoint["score"] = math.inf
                if scenario == "train_checkpoint_extra":
                    checkpoint["secret"] = 1
                session.send({"event": "checkpoint", "job": n if scenario == "train_checkpoint_other_job" else job,
                              "checkpoint": checkpoint})
                if scenario == "train_checkpoint_twice" and update == 3:
                    session.send({"event": "checkpoint", "job": job, "checkpoint": checkpoint})
        session.send({"event": "update", "update": update + (1 if scenario == "train_update_skips" else 0)})
    shipped = {str(job): 0 if scenario == "train_ships_another_checkpoint" else 1 for job in range(n)}  # "final"
    if scenario == "train_ships_for_another_job":
        shipped[str(n)] = 1
    one_fails = scenario in ("train_one_fails", "outputs_for_failed")
    failures = {"1": {"kind": "non_finite", "reason": "NaN in job 1"}} if one_fails else {}
    if failures:
        del shipped["1"]
    session.send({"event": "trained", "failures": failures, "updates": 2 if scenario == "train_updates_differ" else 3,
                  "timing": {**timing, "train_s": 2.0}, "shipped": shipped})
    try:
        session.recv()  # outputs
    except EOFError:
        return
    if scenario == "outputs_oversized":
        h = json.dumps({"event": "output", "job": 0, "policy": 8, "arrays": [], "seq": session.seq}).encode()
        _raw(session, struct.pack("<I", len(h)) + h + struct.pack("<Q", 1 << 40))
        time.sleep(30)
    if scenario == "outputs_error":
        session.send({"ok": False, "kind": "runtime_error", "reason": "rollouts failed"})
        return
    for job in range(n):
        if job in (1,) and scenario == "train_one_fails":
            continue
        session.send({"event": "output", "job": job + (n if scenario == "outputs_other_job" else 0), "policy": 8,
                      "arrays": []}, b"POLICY!!")
        if scenario == "outputs_twice":
            session.send({"event": "output", "job": job, "policy": 8, "arrays": []}, b"POLICY!!")
    session.send({"event": "done"})


def compile_main(host_pid: int) -> None:
    """The host's compile step, as bird/learners/trainer.py's runs: the pickled (jobs, width) on stdin, the
    executables on stdout (here, bytes naming the scenario and width), exit status 0 on success."""
    jobs, width = pickle.loads(sys.stdin.buffer.read())  # noqa: S301 - from the host
    scenario = jobs[0].candidate_id.removeprefix("scenario:")
    if scenario == "compile_fails":
        print("compiling...\nValueError: no training program for this shape", file=sys.stderr)
        sys.exit(3)
    if scenario == "compile_silent_failure":
        sys.exit(4)
    if scenario == "compile_hangs":
        time.sleep(60)
    sys.stdout.buffer.write(f"EXECUTABLES {scenario} {width} {os.getpid()}".encode())
