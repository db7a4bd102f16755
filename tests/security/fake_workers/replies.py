"""A worker that applies the real layers, then answers with the reply named on the program's first line
(`# scenario: NAME`): malformed frames, hostile texts, wrong sizes, non-finite values, deaths."""

from __future__ import annotations

import json
import math
import os
import struct
import time

import numpy as np

from bird.reward.worker import start


def _raw(session, data: bytes) -> None:
    os.write(session.result_fd, data)


def _call_reply(session, scenario: str, b: int) -> None:  # noqa: C901 - one branch per scenario
    table = lambda n: np.arange(b * (1 + n), dtype=np.float64).tobytes()  # noqa: E731
    if scenario == "header_too_large":
        _raw(session, struct.pack("<I", 1 << 30))
    elif scenario == "header_not_json":
        _raw(session, struct.pack("<I", 8) + b"{not-js}")
    elif scenario == "wrong_sequence":
        h = json.dumps({"ok": True, "names": [], "seq": session.seq + 7}).encode()
        _raw(session, struct.pack("<I", len(h)) + h + struct.pack("<Q", b * 8) + table(0))
    elif scenario == "payload_too_large":
        h = json.dumps({"ok": True, "names": [], "seq": session.seq}).encode()
        _raw(session, struct.pack("<I", len(h)) + h + struct.pack("<Q", 1 << 40))
    elif scenario == "short_payload":
        session.send({"ok": True, "names": ["a"]}, table(0))
    elif scenario == "non_finite":
        session.send({"ok": True, "names": ["a"]}, np.full(b * 2, np.nan).tobytes())
    elif scenario == "bad_names":
        session.send({"ok": True, "names": ["fine", "bad name\n\x1b[31m"]}, table(2))
    elif scenario == "too_many_names":
        session.send({"ok": True, "names": [f"c{i}" for i in range(33)]}, table(0))
    elif scenario == "duplicate_names":
        session.send({"ok": True, "names": ["a", "a"]}, table(2))
    elif scenario == "hostile_failure":
        session.send({"ok": False, "kind": "sandbox_escape", "reason": "\x1b[2J\x1b[31m" + "R" * 10000 + "\u202e\x00",
                      "detail": "line one\nline two\x07\x1b[0m" + "D" * 10000})
    elif scenario == "debug_rows":
        session.send({"ok": True, "names": [], "debug": {"0": "\x1b[2Jshown", "5": "not asked", "x": "junk"}}, table(0))
    elif scenario == "exit_in_call":
        os._exit(3)
    elif scenario == "cpu_limit_signal":  # the kernel's SIGXCPU (a signal it sends itself is ignored: it is pid 1)
        import resource

        soft = math.ceil(time.process_time() + 0.01)  # fires within a second of CPU
        resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.getrlimit(resource.RLIMIT_CPU)[1]))
        while True:
            pass
    elif scenario == "never_replies":
        time.sleep(60)
    elif scenario == "deep_json":  # nested past the JSON reader's recursion limit, within the 64 KiB header limit
        h = (f'{{"seq": {session.seq}, "ok": true, "names": ' + "[" * 30000 + "]" * 30000 + "}").encode()
        _raw(session, struct.pack("<I", len(h)) + h + struct.pack("<Q", 0))
    elif scenario == "names_not_list":
        session.send({"ok": True, "names": "abc"}, table(0))
    elif scenario == "debug_not_int":  # keys that pass str.isdigit() but not int()
        session.send({"ok": True, "names": [], "debug": {"\u00b2": "sup", "\u2460": "circled", "0": "kept"}},
                     table(0))
    elif scenario == "failure_odd_types":
        session.send({"ok": False, "kind": ["runtime_error"], "reason": {"a": [1, 2]}, "detail": 12})
    elif scenario == "ok_not_true":
        session.send({"ok": "yes", "names": []}, table(0))
    else:
        session.send({"ok": True, "names": []}, table(0))


def _jax_replies(session, scenario: str) -> None:
    while True:
        try:
            header, _ = session.recv()
        except EOFError:
            return
        op = header.get("op")
        if op == "trace":
            names = {"jax_trace_names_string": "abc", "jax_trace_names_bad": ["ok", "bad name"]}.get(scenario, ["a"])
            session.send({"ok": True, "names": names})
        elif op == "export":
            names = {"jax_export_names_dict": {"a": 1}, "jax_export_names_other": ["b"]}.get(scenario, ["a"])
            session.send({"ok": True, "names": names}, b"\x00" * 128)
        elif op == "dry_run":
            session.send({"ok": scenario != "jax_dry_run_fails", "kind": "timeout", "reason": "spun"})


def main(result_fd: int) -> None:
    session, _ = start(result_fd)
    load, _ = session.recv()
    scenario = load["code"].splitlines()[0].removeprefix("# scenario: ").strip()
    if scenario == "plan_list_flood":
        session.send({"ok": True, "plan_list": ["step"] * 1000})
    elif scenario == "plan_list_string":
        session.send({"ok": True, "plan_list": "not a list"})
    elif scenario == "weights_odd":
        session.send({"ok": True, "weights": {"a": True, "b": float("inf")}})
    elif scenario.startswith("jax_"):  # the jax language's trace and export replies
        session.send({"ok": True})
        _jax_replies(session, scenario)
        return
    else:
        session.send({"ok": True, "plan_list": ["\x1b[31mred\x00 step"]} if scenario == "plan_list_clean" else {"ok": True})
    if scenario == "stops_reading":  # alive, but never reads another request
        time.sleep(60)
    while True:
        try:
            header, _ = session.recv()
        except EOFError:
            return
        _call_reply(session, scenario, int(header["batch"]))
