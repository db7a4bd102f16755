"""The isolated trainer's side of its protocol (bird/learners/trainer.py), run in the test process: a session that
records what the trainer sends and a stand-in for the training run (the compiled JAX program, which only the real
trainer builds: tests/security/test_trainer_host.py and tests/jaxpath run it). What is checked is what the host
reads: each phase's reply, its events in order, the framing of programs and outputs, and how a failure is reported
(one job's, the group's, or every job's before the programs arrived)."""

from __future__ import annotations

import dataclasses
import math
import traceback

import numpy as np
import pytest

from bird.learners import trainer
from bird.learners.jax_ppo import GroupError
from bird.reward import isolation
from bird.reward.jax_export import ExportedReward
from bird.types import Checkpoint, Failure, FailureKind

CHECKPOINT = Checkpoint(96, 0.5, 1.0, 2.0, 3.0, 10.0, {"r": 0.25})
BAD = Failure(FailureKind.RUNTIME_ERROR, "job 1 produced NaN", "detail")


class Session:
    """What the trainer receives (in order) and what it sent."""

    def __init__(self, *incoming: tuple[dict, bytes]) -> None:
        self.incoming, self.sent = list(incoming), []

    def recv(self) -> tuple[dict, bytes]:
        return self.incoming.pop(0)

    def send(self, header: dict, payload: bytes = b"") -> None:
        self.sent.append((header, payload))


@dataclasses.dataclass
class Job:
    save_policy: bool


class Run:
    """The training run's interface as the trainer uses it (jax_ppo.GroupTraining)."""

    def __init__(self, load_error: Exception | None = None, train_error: Exception | None = None,
                 live: tuple[int, ...] = (0, 2)) -> None:
        self.jobs = [Job(True), Job(False), Job(True)]
        self.load_error, self.train_error, self.live = load_error, train_error, list(live)
        self.programs: list = []
        self.failures = {1: BAD}
        self.updates, self.timing = 3, {"train_s": 1.5}

    def load(self, programs):
        self.programs = programs
        if self.load_error:
            raise self.load_error
        return {1: BAD}

    def train(self, on_update, on_checkpoint):
        on_update(1)
        on_checkpoint(0, CHECKPOINT)
        if self.train_error:
            raise self.train_error
        on_update(2)

    def ship(self):
        return {0: 1, 2: 0}

    def rollouts(self):
        return {2: {"obs": np.arange(4, dtype=np.float32).reshape(2, 2), "done": np.array([True, False])}}

    def trained(self):
        return [0, 2]

    def policy(self, i):
        return f"policy{i}".encode()


# --- replies and arrays -------------------------------------------------------------------------------------------
def test_a_failure_reply_carries_the_kind_a_short_reason_and_the_traceback():
    try:
        raise ValueError("boom " + "x" * 600)
    except ValueError as exc:
        reply = trainer._failure("runtime_error", exc, group=True)
        trace = "".join(traceback.format_exception(exc))
    assert reply["ok"] is False and reply["kind"] == "runtime_error" and reply["group"] is True
    assert reply["reason"] == ("ValueError: boom " + "x" * 600)[:500]
    assert reply["detail"].startswith("Traceback") and "raise ValueError" in reply["detail"]
    assert reply["detail"] == trace[-3000:]
    assert trainer._failure("train_error", "said plainly") == {"ok": False, "kind": "train_error",
                                                              "reason": "said plainly", "detail": "", "group": False}


def test_a_long_traceback_keeps_its_last_3000_characters():
    try:
        raise RuntimeError("y" * 5000)
    except RuntimeError as exc:
        detail = trainer._failure("runtime_error", exc)["detail"]
    assert len(detail) == 3000 and detail.endswith("y" * 100 + "\n")


def test_arrays_go_as_little_endian_int64_or_float64_with_their_names_and_shapes():
    spec, data = trainer.encode_arrays({"f": np.ones((2, 3), dtype=np.float32), "b": np.array([True, False]),
                                        "u": np.array([7], dtype=np.uint8), "n": [1.5, 2.5]})
    assert spec == [["f", "<f8", [2, 3]], ["b", "<i8", [2]], ["u", "<i8", [1]], ["n", "<f8", [2]]]
    assert data == (np.ones(6, "<f8").tobytes() + np.array([1, 0], "<i8").tobytes() + np.array([7], "<i8").tobytes()
                    + np.array([1.5, 2.5], "<f8").tobytes())
    fortran = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    assert trainer.encode_arrays({"a": fortran})[1] == np.arange(6.0).astype("<f8").tobytes()


# --- load ---------------------------------------------------------------------------------------------------------
def _meta(hlo: bytes, components=("a",), obs=11, act=3, rows=32) -> dict:
    return {"size": len(hlo), "components": list(components), "obs_dim": obs, "act_dim": act, "rows": rows}


def test_load_cuts_each_program_from_the_payload_and_answers_with_the_failures_and_the_live_jobs():
    run, session = Run(), Session()
    header = {"programs": [_meta(b"first", ("a", "b"), 11, 3, 32), None, _meta(b"second!", ("c",), 5, 1, 8),
                           _meta(b"3rd")]}
    assert trainer._load(session, run, header, b"firstsecond!3rd") is True
    assert run.programs == [ExportedReward(b"first", ("a", "b"), 11, 3, 32), None,
                            ExportedReward(b"second!", ("c",), 5, 1, 8), ExportedReward(b"3rd", ("a",), 11, 3, 32)]
    assert session.sent == [({"ok": True, "failures": {"1": BAD.to_json()}, "live": [0, 2]}, b"")]


def test_load_with_no_live_job_left_ends_the_run():
    assert trainer._load(Session(), Run(live=()), {"programs": []}, b"") is False


def test_a_group_error_while_loading_is_the_groups_failure():
    session = Session()
    assert trainer._load(session, Run(load_error=GroupError("shared step")), {"programs": []}, b"") is False
    assert session.sent == [({"ok": False, "kind": "runtime_error", "reason": "shared step", "detail": "",
                              "group": True}, b"")]


# --- train --------------------------------------------------------------------------------------------------------
def test_train_sends_each_update_and_checkpoint_then_what_trained():
    session = Session()
    assert trainer._train(session, Run()) is True
    assert [h for h, _ in session.sent] == [
        {"event": "update", "update": 1},
        {"event": "checkpoint", "job": 0, "checkpoint": dataclasses.asdict(CHECKPOINT)},
        {"event": "update", "update": 2},
        {"event": "trained", "failures": {"1": BAD.to_json()}, "updates": 3, "timing": {"train_s": 1.5},
         "shipped": {"0": 1, "2": 0}}]
    assert math.isnan(session.sent[1][0]["checkpoint"]["eval_own_return"])


def test_a_group_error_in_training_is_an_error_event_of_the_group():
    session = Session()
    assert trainer._train(session, Run(train_error=GroupError("nan in the shared step"))) is False
    assert session.sent[-1][0] == {"ok": False, "kind": "runtime_error", "reason": "nan in the shared step",
                                   "detail": "", "group": True, "event": "error"}
    assert [h.get("event") for h, _ in session.sent] == ["update", "checkpoint", "error"]


# --- outputs ------------------------------------------------------------------------------------------------------
def test_outputs_send_each_trained_jobs_policy_when_saved_and_its_arrays_then_done():
    session = Session()
    trainer._outputs(session, Run())
    spec, data = trainer.encode_arrays(Run().rollouts()[2])
    assert session.sent == [({"event": "output", "job": 0, "policy": len(b"policy0"), "arrays": []}, b"policy0"),
                            ({"event": "output", "job": 2, "policy": len(b"policy2"), "arrays": spec},
                             b"policy2" + data),
                            ({"event": "done"}, b"")]


def test_a_job_that_does_not_save_its_policy_sends_none():
    run = Run()
    run.jobs[0] = Job(False)
    session = Session()
    trainer._outputs(session, run)
    assert session.sent[0] == ({"event": "output", "job": 0, "policy": 0, "arrays": []}, b"")


# --- the phases ---------------------------------------------------------------------------------------------------
@pytest.fixture
def started(monkeypatch):
    """main's start: the layers are not applied to the test process (tests/reward/forked.py does that in a fork)."""
    def start(session):
        monkeypatch.setattr(trainer, "start_configured", lambda fd: (session, isolation.IsolationConfig(
            memory_mb=0, call_timeout_s=1.0, host_pid=0)))
        return session
    return start


def test_explain_reports_no_deferred_drop_without_one_and_does_nothing_more(started):
    session = started(Session(({"op": "explain"}, b"")))
    trainer.main(7)
    assert session.sent == [({"ok": True, "layers": []}, b"")]


def test_a_failure_while_setting_up_is_every_jobs_and_ends_the_trainer(started):
    session = started(Session(({"op": "setup", "width": 2}, b"not a pickle"), ({"op": "load"}, b"")))
    trainer.main(7)
    [(reply, _)] = session.sent
    assert reply["ok"] is False and reply["kind"] == "train_error" and reply["group"] is False
    assert reply["reason"].startswith("UnpicklingError")
    assert session.incoming == [({"op": "load"}, b"")]  # nothing read after the failed setup


def test_after_setup_the_trainer_loads_trains_and_sends_outputs_in_turn(monkeypatch):
    run, cfg, calls = Run(), _cfg(False), []
    session = Session(({"op": "setup", "width": 2}, b"jobs"), ({"programs": [_meta(b"p")]}, b"p"),
                      ({"op": "train"}, b""), ({"op": "outputs"}, b""))
    monkeypatch.setattr(trainer, "start_configured", lambda fd: calls.append(fd) or (session, cfg))
    monkeypatch.setattr(trainer, "_setup", lambda *args: calls.append(args) or run)
    trainer.main(7)
    assert calls == [7, (session, cfg, {"op": "setup", "width": 2}, b"jobs")]
    assert run.programs == [ExportedReward(b"p", ("a",), 11, 3, 32)]
    assert [h.get("event", "loaded") for h, _ in session.sent] == ["loaded", "update", "checkpoint", "update",
                                                                   "trained", "output", "output", "done"]
    assert session.incoming == []


def test_a_load_that_leaves_nothing_to_train_ends_the_trainer(started, monkeypatch):
    monkeypatch.setattr(trainer, "_setup", lambda *args: Run(live=()))
    session = started(Session(({"op": "setup"}, b""), ({"programs": []}, b""), ({"op": "train"}, b"")))
    trainer.main(7)
    assert len(session.sent) == 1 and session.incoming == [({"op": "train"}, b"")]


def test_any_error_after_the_programs_arrived_is_the_groups_and_ends_the_trainer(started, monkeypatch):
    monkeypatch.setattr(trainer, "_setup", lambda *args: Run(train_error=KeyError("slot")))
    session = started(Session(({"op": "setup"}, b""), ({"programs": []}, b""), ({"op": "train"}, b""),
                              ({"op": "outputs"}, b"")))
    trainer.main(7)
    last = session.sent[-1][0]
    assert (last["event"], last["kind"], last["group"], last["reason"]) == ("error", "runtime_error", True,
                                                                           "KeyError: 'slot'")
    assert session.incoming == [({"op": "outputs"}, b"")]


class Settings:
    def to_json(self) -> dict:
        return {"num_envs": 4}


DROPPED = {"name": "uid_drop", "active": True, "detail": "dropped to 65534"}


class Dropped:
    """The deferred uid drop's layer, made from the trainer's own isolation config."""

    def __init__(self, cfg: isolation.IsolationConfig) -> None:
        assert cfg.host_pid == 4321, cfg

    def to_json(self) -> dict:
        return DROPPED


@pytest.fixture
def trusted(monkeypatch):
    """_setup's trusted parts replaced: the compiled training program (GroupTraining, built only in the trainer) and
    JAX's cache; every GroupTraining made is recorded with its arguments."""
    import jax

    import bird.jax_cache
    import bird.learners.jax_ppo

    made = []

    class Group:
        def __init__(self, jobs, width, executables):
            made.append((jobs, width, executables))
            self.rows, self.settings, self.timing = 96, Settings(), {"compile_s": 2.0}

    monkeypatch.setattr(bird.learners.jax_ppo, "GroupTraining", Group)
    monkeypatch.setattr(bird.jax_cache, "enable_compilation_cache", lambda: made.append("cache"))
    flag = "jax_include_full_tracebacks_in_locations"
    old = getattr(jax.config, flag)
    jax.config.update(flag, True)  # _setup turns it off
    yield made
    jax.config.update(flag, old)


def _cfg(defer: bool) -> isolation.IsolationConfig:
    return isolation.IsolationConfig(memory_mb=0, call_timeout_s=1.0, host_pid=4321, defer_uid_drop=defer)


def test_setup_builds_the_run_from_the_pickled_jobs_and_answers_with_its_shape(trusted, monkeypatch):
    import pickle

    import jax

    monkeypatch.setattr(trainer.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(jax, "devices", lambda: [f"gpu:{i}" for i in range(20)])  # only the first 16 are named
    session = Session()
    run = trainer._setup(session, _cfg(True), {"width": "3"}, pickle.dumps((["job a", "job b"], {"exe": b"x"})))
    assert trusted == ["cache", (["job a", "job b"], 3, {"exe": b"x"})] and run.rows == 96
    assert session.sent == [({"ok": True, "rows": 96, "settings": {"num_envs": 4}, "timing": {"compile_s": 2.0},
                              "layers": [], "devices": [f"gpu:{i}" for i in range(16)]}, b"")]
    assert jax.config.jax_include_full_tracebacks_in_locations is False


@pytest.mark.parametrize(("defer", "euid", "layers"), [(True, 0, [DROPPED]), (True, 1000, []),
                                                       (False, 0, [])])
def test_a_root_trainer_drops_its_uid_after_setup_only_when_told_to_defer(trusted, monkeypatch, defer, euid, layers):
    import pickle

    monkeypatch.setattr(trainer.os, "geteuid", lambda: euid)
    monkeypatch.setattr(isolation, "drop_identity", Dropped)
    session = Session()
    trainer._setup(session, _cfg(defer), {"width": 1}, pickle.dumps(([], None)))
    assert session.sent[0][0]["layers"] == layers


@pytest.mark.parametrize(("defer", "euid", "layers"), [(True, 0, [DROPPED]), (True, 1000, []),
                                                       (False, 0, [])])
def test_explain_reports_the_deferred_drop_of_a_root_trainer(monkeypatch, defer, euid, layers):
    session = Session(({"op": "explain"}, b""), ({"op": "setup"}, b""))
    monkeypatch.setattr(trainer, "start_configured", lambda fd: (session, _cfg(defer)))
    monkeypatch.setattr(trainer.os, "geteuid", lambda: euid)
    monkeypatch.setattr(isolation, "drop_identity", Dropped)
    trainer.main(7)
    assert session.sent == [({"ok": True, "layers": layers}, b"")] and len(session.incoming) == 1


def test_the_compile_step_writes_only_the_executables_to_stdout(monkeypatch, tmp_path):
    """compile_main with the process's stdout and stderr on files (it rewires fd 1; restored after): the pickled
    (jobs, width) in, the serialized program out on stdout, what a library writes to fd 1 on stderr; the host's pid
    given to die_with_parent."""
    import io
    import os
    import pickle
    import sys

    import bird.jax_cache
    import bird.learners.jax_executables
    import bird.learners.jax_ppo
    import bird.lifetime

    calls = []

    class Group:
        def __init__(self, jobs, width, keep):
            calls.append(("group", jobs, width, keep.where))

        def serialized_program(self, keep):
            calls.append(("serialized", keep.where))
            os.write(1, b"library noise\n")  # a C library printing: on fd 1, as the compile step finds it
            return b"EXECUTABLES"

    class Store:
        def __init__(self, where):
            self.where = where

    monkeypatch.setattr(bird.lifetime, "die_with_parent", lambda pid: calls.append(("parent", pid)))
    monkeypatch.setattr(bird.jax_cache, "without_persistent_cache", lambda: calls.append("no cache"))
    monkeypatch.setattr(bird.learners.jax_executables, "store_dir", lambda: tmp_path)
    monkeypatch.setattr(bird.learners.jax_executables, "Executables", Store)
    monkeypatch.setattr(bird.learners.jax_ppo, "GroupTraining", Group)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(pickle.dumps((["job"], 4)))))
    saved = os.dup(1), os.dup(2)
    with open(tmp_path / "out", "wb") as out, open(tmp_path / "err", "wb") as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            trainer.compile_main(4321)
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
    assert (tmp_path / "out").read_bytes() == b"EXECUTABLES"
    assert (tmp_path / "err").read_bytes() == b"library noise\n"
    assert calls == [("parent", 4321), "no cache", ("group", ["job"], 4, tmp_path), ("serialized", tmp_path)]
