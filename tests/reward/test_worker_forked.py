"""The reward worker (bird/reward/worker.py) in a forked child of the test process, spoken to over its real pipes
and framing: it applies every layer to itself, loads a program under the per-call limits, serves calls until its
input closes, and reports every failure with a reason that names the limit that fired. (tests/security runs the
same worker as a fresh interpreter through the host's WorkerProcess; the fork lets mutation testing reach it.)
The error record, the session and the start-up steps (the layers stubbed: a refusal, the config asked for) are also
tested in this process."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import select
import signal
import traceback

import numpy as np
import pytest
from forked import Child, limits, send, spawn, vm_size_mb

from bird.reward import isolation, protocol, worker
from bird.reward.languages import get_language

ROOT = os.geteuid() == 0
FIELDS = [["x", 0, 1], ["v", 1, 2]]
CLEAN = """
import numpy as np

def compute_reward(obs, action, next_obs, info):
    speed = np.linalg.norm(next_obs["v"], axis=-1)
    effort = -0.5 * np.sum(action ** 2, axis=-1)
    return speed + effort + next_obs["x"], {"speed": speed, "effort": effort}
"""


class ForkedWorker:
    """A worker main function in a forked child: fd 0 = requests, `result_fd` = replies, an empty working directory."""

    def __init__(self, workdir, entry=worker.main, memory_mb: int | None = None, call_timeout_s: float = 5.0,
                 language: str = "numpy") -> None:
        workdir.mkdir(parents=True)
        req_r, self.req_w = os.pipe()
        self.res_r, res_w = os.pipe()
        self.child: Child = spawn(entry, res_w, keep=(res_w,), stdin=req_r, cwd=str(workdir))
        os.close(req_r)
        os.close(res_w)
        self.seq = 0
        self.memory_mb = memory_mb or vm_size_mb() + 2048
        self.init = self.request({"language": language, "isolation": {
            "memory_mb": self.memory_mb, "call_timeout_s": call_timeout_s, "host_pid": os.getpid()}})[0]

    def send(self, header: dict, payload: bytes = b"") -> None:
        self.seq += 1
        protocol.write_all(self.req_w, protocol.encode({"seq": self.seq, **header}, payload))

    def reply(self, timeout: float = 60.0) -> tuple[dict, bytes]:
        if not select.select([self.res_r], [], [], timeout)[0]:
            raise TimeoutError(f"no reply in {timeout} s")
        return protocol.read_frame_blocking(self.res_r)

    def request(self, header: dict, payload: bytes = b"", timeout: float = 60.0) -> tuple[dict, bytes]:
        self.send(header, payload)
        return self.reply(timeout)

    def load(self, code: str, contract: str = "compute_reward", entry: str = "compute_reward") -> dict:
        return self.request({"code": code, "entry": entry, "contract": contract, "fields": FIELDS})[0]

    def call(self, obs: np.ndarray, action: np.ndarray, nxt: np.ndarray, timeout: float = 60.0) -> tuple[dict, bytes]:
        header = {"batch": len(obs), "obs_dim": obs.shape[1], "act_dim": action.shape[1], "n_envs": 1, "reset": False,
                  "has_dones": False, "debug_rows": []}
        return self.request(header, obs.tobytes() + action.tobytes() + nxt.tobytes(), timeout)

    def close(self, timeout: float = 60.0) -> Child:
        os.close(self.req_w)
        child = self.child.wait(timeout)
        os.close(self.res_r)
        return child


BATCH = (np.array([[1.0, 3.0, 4.0], [-2.0, 0.0, 0.5]]), np.array([[2.0], [0.0]]),
         np.array([[0.5, 6.0, 8.0], [1.5, 1.0, 0.0]]))


def _table(data: bytes, names: list[str]) -> np.ndarray:
    return np.frombuffer(data, dtype="<f8").reshape(-1, 1 + len(names))


def test_a_clean_program_is_loaded_and_called_in_sequence_until_its_input_closes(tmp_path):
    w = ForkedWorker(tmp_path / "work")
    assert w.init["ok"] is True and w.init["seq"] == 1
    assert [d["name"] for d in w.init["layers"]] == list(isolation.LAYERS)
    assert all(d["active"] for d in w.init["layers"]), w.init["layers"]
    assert w.load(CLEAN) == {"ok": True, "seq": 2}
    reply, data = w.call(*BATCH)
    assert reply == {"ok": True, "names": ["speed", "effort"], "seq": 3}
    # speed = |v'|, effort = -0.5 a², reward = speed + effort + x'
    assert _table(data, reply["names"]).tolist() == [[10.0 - 2.0 + 0.5, 10.0, -2.0], [1.0 + 0.0 + 1.5, 1.0, 0.0]]
    reply, data = w.call(BATCH[0], BATCH[1] * 2, BATCH[0])
    assert reply["seq"] == 4 and _table(data, reply["names"])[:, 2].tolist() == [-8.0, 0.0]
    child = w.close()
    assert child.status == 0 and child.result is None  # main returned when its input closed


def test_a_request_without_a_sequence_number_is_answered_as_zero(tmp_path):
    w = ForkedWorker(tmp_path / "work")
    w.load(CLEAN)
    protocol.write_all(w.req_w, protocol.encode({"batch": 1, "obs_dim": 3, "act_dim": 1, "has_dones": False},
                                                np.zeros(7).tobytes()))
    reply, _ = w.reply()
    assert reply["ok"] is True and reply["seq"] == 0
    w.close()


def test_a_failing_call_is_reported_with_the_programs_lines_only_and_the_next_call_is_served(tmp_path):
    code = CLEAN.replace('    speed = ', '    if next_obs["x"][0] < 0:\n        raise ValueError(f"negative x {next_obs[\'x\'][0]}")\n    speed = ')
    w = ForkedWorker(tmp_path / "work")
    assert w.load(code)["ok"] is True
    reply, data = w.call(BATCH[0], BATCH[1], BATCH[0][::-1].copy())
    assert data == b"" and reply["ok"] is False and reply["seq"] == 3
    assert (reply["kind"], reply["reason"]) == ("runtime_error", "ValueError: negative x -2.0")
    assert 'File "<reward>", line 6, in compute_reward' in reply["detail"]
    assert reply["detail"].endswith("ValueError: negative x -2.0\n")
    assert "bird/reward/" not in reply["detail"] and reply["detail"].startswith("Traceback")
    reply, data = w.call(*BATCH)
    assert reply["ok"] is True and _table(data, reply["names"])[0, 1] == 10.0
    assert w.close().status == 0


def test_failing_module_level_code_is_reported_and_the_worker_ends(tmp_path):
    w = ForkedWorker(tmp_path / "work")
    reply = w.load("x = 1\nraise KeyError('at load')\n" + CLEAN)
    assert reply["ok"] is False and reply["seq"] == 2
    assert (reply["kind"], reply["reason"]) == ("runtime_error", "KeyError: 'at load'")
    assert 'File "<reward>", line 2, in <module>' in reply["detail"]
    child = w.child.wait(30)  # it does not wait for more input
    assert child.status == 0 and child.result is None
    os.close(w.req_w)
    os.close(w.res_r)


def test_a_program_that_is_not_the_contract_fails_to_load(tmp_path):
    w = ForkedWorker(tmp_path / "work")
    reply = w.load("def other(obs, action, next_obs, info):\n    return 0, {}\n")
    assert reply["ok"] is False and reply["reason"] == "KeyError: 'compute_reward'"
    w.close()


def test_a_progress_program_loads_with_its_plan(tmp_path):
    code = ("plan_list = ['reach', 'push']\n\ndef determine_subtask(obs):\n    return 0\n\n"
            "def progress(obs):\n    return float(obs['x'])\n")
    w = ForkedWorker(tmp_path / "work")
    assert w.load(code, "progress_program", "progress") == {"ok": True, "plan_list": ["reach", "push"], "seq": 2}
    w.close()


def test_memory_and_recursion_failures_name_the_limit_that_fired(tmp_path):
    mb = vm_size_mb() + 512
    code = CLEAN.replace("    speed = ", "    if next_obs['x'][0] > 1:\n        deep(0)\n"
                                       "    if next_obs['x'][0] < 0:\n        np.ones(1 << 28)\n    speed = ")
    code = "def deep(n):\n    return deep(n + 1) + 1\n" + code
    w = ForkedWorker(tmp_path / "work", memory_mb=mb)
    assert w.load(code)["ok"] is True
    big, _ = w.call(BATCH[0], BATCH[1], BATCH[0][::-1].copy())  # 2 GiB of ones
    assert big["reason"].startswith(f"the memory limit fired (address space, memory_mb={mb} MiB): MemoryError: ")
    deep, _ = w.call(BATCH[0], BATCH[1], BATCH[0] + 1)
    assert deep["reason"] == "the recursion limit fired: RecursionError: maximum recursion depth exceeded"
    ok, _ = w.call(*BATCH)
    assert ok["ok"] is True  # and the worker still serves
    assert w.close().status == 0


def test_reasons_and_details_are_bounded(tmp_path):
    code = CLEAN.replace("    speed = ", "    raise ValueError('y' * 9000 + 'END')\n    speed = ")
    w = ForkedWorker(tmp_path / "work")
    w.load(code)
    reply, _ = w.call(*BATCH)
    assert reply["reason"] == "ValueError: " + "y" * (500 - len("ValueError: "))
    assert len(reply["detail"]) == 4000 and reply["detail"].endswith("yyyEND\n")
    w.close()


def _spin_reply(tmp_path, code: str, at_load: bool) -> Child:
    w = ForkedWorker(tmp_path / "work", call_timeout_s=0.4)
    if at_load:
        w.send({"code": code, "entry": "compute_reward", "contract": "compute_reward", "fields": FIELDS})
    else:
        assert w.load(code)["ok"] is True
        w.send({"batch": 2, "obs_dim": 3, "act_dim": 1, "has_dones": False}, np.zeros(14).tobytes())
    with pytest.raises(EOFError):
        w.reply(timeout=120)  # the worker dies without replying
    return w.close(timeout=60)


def test_module_level_code_and_calls_run_under_the_per_call_cpu_limit(tmp_path):
    spin = "def compute_reward(obs, action, next_obs, info):\n    while True:\n        pass\n"
    assert _spin_reply(tmp_path / "call", spin, at_load=False).status == -signal.SIGXCPU
    assert _spin_reply(tmp_path / "load", "while True:\n    pass\n" + spin, at_load=True).status == -signal.SIGXCPU


def _probe(result_fd: int) -> None:
    """A worker entry that applies the layers through worker.start and reports what it may then do."""
    import resource
    import threading
    import time

    session, language = worker.start(result_fd)
    header, _ = session.recv()

    def attempt(fn):
        try:
            fn()
            return "ok"
        except BaseException as exc:  # noqa: BLE001
            return type(exc).__name__

    def read(path):
        with open(path, "rb") as fh:
            fh.read(1)

    session.send({"language": language.name, "as": resource.getrlimit(resource.RLIMIT_AS),
                  "cpu": resource.getrlimit(resource.RLIMIT_CPU), "cpu_used": time.process_time(),
                  "ppid": os.getppid(), "numpy": attempt(lambda: read(np.__file__)),
                  "bird": attempt(lambda: read(worker.__file__)),
                  "thread": attempt(lambda: threading.Thread(target=print).start())})


def test_start_applies_the_layers_with_the_hosts_limits_and_the_languages_modules(tmp_path):
    mb = vm_size_mb() + 1500
    w = ForkedWorker(tmp_path / "work", entry=_probe, memory_mb=mb, call_timeout_s=2.5)
    assert [d["name"] for d in w.init["layers"]] == list(isolation.LAYERS)
    assert all(d["active"] for d in w.init["layers"])
    found, _ = w.request({"host": os.getpid()})
    import math

    assert found["as"] == [mb << 20] * 2
    assert found["cpu"] == [math.ceil(found["cpu_used"]) + 3 + 1, isolation.cpu_budget()]
    assert found["numpy"] == "ok" and found["bird"] == "FileNotFoundError"  # numpy in its tree; bird was preloaded
    assert found["thread"] == "RuntimeError" and found["language"] == "numpy"
    assert found["ppid"] == 1  # the init of its pid namespace (the host is outside it)
    assert found["seq"] == 2
    w.close()


def test_an_unknown_language_ends_the_worker_before_any_layer(tmp_path):
    req_r, req_w = os.pipe()
    res_r, res_w = os.pipe()
    (tmp_path / "work").mkdir()
    child = spawn(worker.main, res_w, keep=(res_w,), stdin=req_r, cwd=str(tmp_path / "work"))
    os.close(req_r)
    os.close(res_w)
    protocol.write_all(req_w, protocol.encode({"seq": 1, "language": "cobol", "isolation": {}}))
    os.close(req_w)
    child.wait(30)
    assert "unknown reward-program language 'cobol'" in child.messages[-1]["error"]
    assert os.read(res_r, 10) == b""
    os.close(res_r)


# -- the error record on its own (in this process) ---------------------------------------------------------------
def _raise_through(exc: BaseException, filename: str):
    code = compile("def boom(exc):\n    raise exc\n", filename, "exec")
    ns: dict = {}
    exec(code, ns)
    try:
        ns["boom"](exc)
    except BaseException as caught:  # noqa: BLE001
        return caught


def test_error_records_keep_only_the_programs_frames_and_name_the_limit():
    err = _raise_through(ValueError("bad value"), "<reward>")
    rec = worker._error("runtime_error", err, 123)
    assert rec == {"ok": False, "kind": "runtime_error", "reason": "ValueError: bad value", "detail": rec["detail"]}
    assert 'File "<reward>", line 2, in boom' in rec["detail"] and rec["detail"].endswith("ValueError: bad value\n")
    assert rec["detail"].startswith("Traceback (most recent call last):\n  File ")  # the kept lines, joined as is
    hidden = _raise_through(ValueError("x"), "/site/bird/reward/adapters.py")
    assert "adapters.py" not in worker._error("bad_output", hidden, 1)["detail"]
    assert worker._error("bad_output", hidden, 1)["kind"] == "bad_output"
    memory = worker._error("runtime_error", _raise_through(MemoryError(), "<reward>"), 640)
    assert memory["reason"] == "the memory limit fired (address space, memory_mb=640 MiB): MemoryError: "
    recursion = worker._error("runtime_error", RecursionError("too deep"), 1)
    assert recursion["reason"] == "the recursion limit fired: RecursionError: too deep"
    assert traceback.format_exception(ValueError, ValueError("z"), None)  # the formatter works on bare exceptions
    assert worker._error("runtime_error", ValueError("z" * 600), 1)["reason"] == "ValueError: " + "z" * 488


def test_the_session_tracks_the_request_sequence(tmp_path):
    r, w = os.pipe()
    rr, rw = os.pipe()
    session = worker.Session(rw)
    protocol.write_all(w, protocol.encode({"seq": 41, "a": 1}, b"xyz"))
    assert session.recv.__func__ is not None
    saved = os.dup(0)
    os.dup2(r, 0)
    try:
        header, payload = session.recv()
    finally:
        os.dup2(saved, 0)
        os.close(saved)
    assert (header, payload, session.seq) == ({"seq": 41, "a": 1}, b"xyz", 41)
    session.send({"ok": True}, b"12")
    assert protocol.read_frame_blocking(rr) == ({"ok": True, "seq": 41}, b"12")
    for fd in (r, w, rr, rw):
        os.close(fd)
    assert limits and send  # helpers shared with the layer tests


# -- the start of a worker, in this process (the layers themselves stubbed out: they would wall in the test) --------
@contextlib.contextmanager
def _stdin(*frames: dict):
    """fd 0 reads `frames` (a pipe) for the duration; the real stdin is put back after."""
    r, w = os.pipe()
    for header in frames:
        protocol.write_all(w, protocol.encode(header))
    os.close(w)
    saved = os.dup(0)
    os.dup2(r, 0)
    os.close(r)
    try:
        yield
    finally:
        os.dup2(saved, 0)
        os.close(saved)


@pytest.fixture
def replies():
    """A result pipe: (write end for the Session, a reader of the frames sent so far)."""
    r, w = os.pipe()

    def read() -> list[tuple[dict, bytes]]:
        os.close(w)
        frames = []
        while True:
            try:
                frames.append(protocol.read_frame_blocking(r))
            except EOFError:
                return frames

    yield w, read
    for fd in (r, w):
        try:
            os.close(fd)
        except OSError:
            pass


def _capture_apply(monkeypatch) -> list[isolation.IsolationConfig]:
    applied: list[isolation.IsolationConfig] = []
    monkeypatch.setattr(isolation, "apply", lambda cfg: applied.append(cfg) or [isolation.Layer("rlimits", True, "")])
    return applied


def test_start_asks_for_the_hosts_limits_and_everything_the_language_needs(monkeypatch, replies):
    lang = dataclasses.replace(get_language("numpy"), name="threaded", threads=True, extra_syscalls=("madvise",),
                               extra_read_paths=("/dev/urandom",))
    monkeypatch.setattr(worker, "get_language", {"threaded": lang}.__getitem__)
    applied = _capture_apply(monkeypatch)
    fd, read = replies
    init = {"seq": 7, "language": "threaded", "isolation": {"memory_mb": "900", "call_timeout_s": 2, "host_pid": 4321}}
    with _stdin(init):
        session, language = worker.start(fd)
    assert language is lang and (session.memory_mb, session.call_timeout_s, session.seq) == (900, 2.0, 7)
    assert applied == [isolation.IsolationConfig(
        memory_mb=900, call_timeout_s=2.0, host_pid=4321, threads=True, read_modules=lang.preload,
        preload=("bird.reward.adapters",), extra_syscalls=("madvise",), extra_read_paths=("/dev/urandom",))]
    assert read() == [({"ok": True, "layers": [{"name": "rlimits", "active": True, "detail": ""}], "seq": 7}, b"")]


def test_a_refused_setup_is_reported_and_ends_the_worker_cleanly(monkeypatch, replies):
    def refuse(cfg):
        raise isolation.SetupRefused("uid 65534 cannot read /opt/venv: make it world-readable")

    monkeypatch.setattr(isolation, "apply", refuse)
    fd, read = replies
    session = worker.Session(fd)
    session.seq = 3
    with pytest.raises(SystemExit) as ended:
        worker.apply_layers(session, isolation.IsolationConfig(memory_mb=0, call_timeout_s=1.0, host_pid=1))
    assert ended.value.code == 0  # the host reads the refusal, not an exit status
    assert read() == [({"ok": False, "refused": "uid 65534 cannot read /opt/venv: make it world-readable",
                        "seq": 3}, b"")]


def test_a_configured_start_applies_the_config_the_host_sent_whole(monkeypatch, replies):
    applied = _capture_apply(monkeypatch)
    cfg = isolation.IsolationConfig(memory_mb=0, call_timeout_s=30.0, host_pid=77, threads=True,
                                    writable_paths=("/out",), cgroup="off", cpu_budget_s=0)
    fd, read = replies
    with _stdin({"seq": 5, "isolation": json.loads(json.dumps(cfg.to_json()))}):
        session, got = worker.start_configured(fd)
    assert got == cfg and applied == [cfg]
    assert (session.result_fd, session.seq) == (fd, 5)
    assert read() == [({"ok": True, "layers": [{"name": "rlimits", "active": True, "detail": ""}], "seq": 5}, b"")]


def test_module_level_code_that_runs_out_of_memory_names_the_sessions_limit(monkeypatch, replies):
    monkeypatch.setattr(isolation, "arm_cpu_limit", lambda seconds: None)  # not on the test process
    fd, read = replies
    session = worker.Session(fd)
    session.memory_mb, session.seq = 640, 2
    big = "np.empty(1 << 50, dtype=np.uint8)\n"  # 1 PiB: more than a 47-bit address space holds, limit or not
    with _stdin({"seq": 2, "code": big, "entry": "compute_reward",
                 "contract": "compute_reward", "fields": FIELDS}):
        assert worker._load(session, get_language("numpy")) is None
    (reply, data), = read()
    assert reply["reason"] == ("the memory limit fired (address space, memory_mb=640 MiB): MemoryError: "
                               "Unable to allocate 1.00 PiB for an array with shape (1125899906842624,) and data "
                               "type uint8")
    assert (reply["ok"], reply["seq"], data) == (False, 2, b"")


def test_a_reply_without_a_payload_carries_an_empty_one(replies):
    fd, read = replies
    worker.Session(fd).send({"ok": True})
    assert read() == [({"ok": True, "seq": 0}, b"")]
