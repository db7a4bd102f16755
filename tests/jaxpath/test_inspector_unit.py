"""The artefact inspector's checks (bird/reward/inspector.py) run in the test process: what the throwaway inspecting
process answers for a genuine artefact and for each kind of bad one (the process itself, behind the reward worker's
layers: test_jax_export.py::test_inspector_and_trainer_reject_host_callbacks_corrupt_bytes_or_the_wrong_signature)."""

from __future__ import annotations

import pytest
from test_jax_export import PROGRAM, _host_callback_program

from bird.config.schema import EnvConfig
from bird.envs.registry import make_adapter
from bird.reward import inspector, isolation
from bird.reward.artefacts import MAX_ARTEFACT_BYTES
from bird.reward.languages import JAX
from bird.reward.sandbox import SandboxedReward
from bird.types import FailureKind

pytest.importorskip("jax")


@pytest.fixture(scope="module")
def good():
    spec = make_adapter(EnvConfig(id="mujoco/hopper", description="x")).spec
    with SandboxedReward(PROGRAM, spec.obs_index, language="jax", action_dim=spec.action_dim) as program:
        return program.export(32, 30.0)


def _header(prog, **changes) -> dict:
    return {"op": "inspect", "obs_dim": prog.obs_dim, "act_dim": prog.act_dim, "components": len(prog.components),
            "rows": prog.rows, **changes}


def test_a_genuine_artefact_passes_and_its_operations_are_counted(good):
    reply = inspector._inspect(_header(good), bytes(good.hlo))
    assert reply["ok"] is True and reply["ops"] > 5 and set(reply) == {"ok", "ops"}


def test_an_artefact_calling_the_host_is_rejected(good):
    bad = _host_callback_program(good.obs_dim, good.act_dim, good.rows)
    reply = inspector._inspect(_header(bad), bytes(bad.hlo))
    assert reply["ok"] is False and reply["kind"] == "rejected" and "custom_call" in reply["reason"]


def test_corrupt_bytes_are_a_bad_output(good):
    reply = inspector._inspect(_header(good), bytes(good.hlo[: len(good.hlo) // 2]))
    assert reply["ok"] is False and reply["kind"] == "bad_output"


@pytest.mark.parametrize(("change", "words"), [({"obs_dim": 12}, "the task needs"), ({"act_dim": 4}, "the task needs"),
                                               ({"rows": 64}, ""), ({"components": 9}, "")])
def test_an_artefact_of_another_signature_is_a_bad_output(good, change, words):
    reply = inspector._inspect(_header(good, **change), bytes(good.hlo))
    assert reply["ok"] is False and reply["kind"] == "bad_output" and words in reply["reason"]
    assert len(reply["reason"]) <= 500


def test_an_artefact_over_16_mib_is_refused_unread(good):
    reply = inspector._inspect(_header(good), b"\0" * (MAX_ARTEFACT_BYTES + 1))
    assert reply == {"ok": False, "kind": "bad_output", "reason": "the artefact is larger than 16 MiB"}
    at_cap = inspector._inspect(_header(good), b"\0" * MAX_ARTEFACT_BYTES)
    assert at_cap["reason"] != "the artefact is larger than 16 MiB"


class Session:
    def __init__(self, header: dict, payload: bytes) -> None:
        self.incoming, self.sent = [(header, payload)], []

    def recv(self):
        return self.incoming.pop(0)

    def send(self, header, payload=b""):
        self.sent.append(header)


def _main(monkeypatch, header: dict, payload: bytes) -> dict:
    """The inspecting process's entry point, without applying the layers to the test process."""
    from bird.reward import worker

    session = Session(header, payload)
    def start(fd):
        assert fd == 5
        return session, isolation.IsolationConfig(memory_mb=0, call_timeout_s=1.0, host_pid=0)

    monkeypatch.setattr(worker, "start_configured", start)
    inspector.main(5)
    [reply] = session.sent
    return reply


def test_the_inspecting_process_answers_once_with_its_verdict(good, monkeypatch):
    assert _main(monkeypatch, _header(good), bytes(good.hlo))["ok"] is True


def test_whatever_an_artefact_makes_the_checks_raise_is_its_failure(good, monkeypatch):
    reply = _main(monkeypatch, {"op": "inspect"}, bytes(good.hlo))
    assert reply == {"ok": False, "kind": "bad_output", "reason": "the artefact broke the inspection: KeyError: "
                                                                  "'obs_dim'"}
    reply = _main(monkeypatch, _header(good, rows="x"), b"")
    assert reply["reason"] == "the artefact broke the inspection: ValueError: invalid literal for int() with base 10: 'x'"


def test_an_inspection_past_its_time_limit_is_the_candidates_timeout(good):
    failure = inspector.inspect_artefact(good, timeout_s=0.05)
    assert failure is not None and failure.kind == FailureKind.TIMEOUT
    assert failure.reason.endswith(f"(artefact {good.digest})") and "inspection time limit (0.05 s" in failure.reason


def test_the_inspector_runs_behind_the_reward_workers_layers_with_xla_threads():
    cfg = inspector._config(12.5)
    assert (cfg.memory_mb, cfg.call_timeout_s, cfg.threads, cfg.max_tasks) == (2048, 12.5, True, 64)
    assert "jax" in cfg.read_modules and "bird.reward.artefacts" in cfg.preload


# --- the host side: inspect_artefact, with a stand-in for the inspecting process ----------------------------------
class Prog:
    """An ExportedReward's fields as inspect_artefact reads them."""

    hlo, components, obs_dim, act_dim, rows, digest = bytearray(b"HLO"), ("a", "b", "c"), 11, 3, 32, "abc123"


class Worker:
    """sandbox.WorkerProcess as inspect_artefact uses it: records how it was started and asked; answers `reply` (or
    raises it)."""

    def __init__(self, reply, start_error=None) -> None:
        self.reply, self.start_error, self.calls = reply, start_error, []

    def __call__(self, language, memory_mb, timeout_s, **kwargs):
        if self.start_error is not None:
            raise self.start_error
        self.calls.append(("start", language, memory_mb, timeout_s, kwargs))
        return self

    def request(self, header, payload, timeout, max_payload, what, limit):
        self.calls.append(("request", header, payload, timeout, max_payload, what, limit))
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply, b""

    def close(self) -> None:
        self.calls.append("close")


def _host(monkeypatch, reply, start_error=None):
    from bird.reward import sandbox

    worker = Worker(reply, start_error)
    monkeypatch.setattr(sandbox, "WorkerProcess", worker)
    return worker


def test_the_host_starts_one_inspector_asks_it_once_and_closes_it(monkeypatch):
    import os

    worker = _host(monkeypatch, {"ok": True, "ops": 9})
    assert inspector.inspect_artefact(Prog(), timeout_s=7.5) is None
    start, request, close = worker.calls
    assert start[:4] == ("start", None, 2048, 7.5) and close == "close"
    kwargs = start[4]
    assert (kwargs["module"], kwargs["name"], kwargs["env"]["TF_CPP_MIN_LOG_LEVEL"]) == (
        "bird.reward.inspector", "artefact inspector", "3")
    assert kwargs["init"] == {"isolation": inspector._config(7.5).to_json()}
    assert kwargs["init"]["isolation"]["host_pid"] == os.getpid()
    assert inspector._config(1.0).extra_read_paths == JAX.extra_read_paths and JAX.extra_read_paths
    assert request[1:] == ({"op": "inspect", "obs_dim": 11, "act_dim": 3, "components": 3, "rows": 32}, b"HLO", 7.5,
                           0, "artefact inspection", "inspection time limit (7.5 s, wall clock)")
    assert type(request[2]) is bytes


@pytest.mark.parametrize(("reply", "kind"), [({"ok": False, "kind": "rejected", "reason": "custom_call"}, "rejected"),
                                             ({"ok": False, "kind": "timeout", "reason": "slow"}, "timeout"),
                                             ({"ok": False, "kind": "train_error", "reason": "x"}, "runtime_error"),
                                             ({"ok": 1, "reason": "x"}, "runtime_error")])
def test_the_inspectors_verdict_is_the_candidates_failure_naming_the_artefact(monkeypatch, reply, kind):
    worker = _host(monkeypatch, {**reply, "detail": "the detail"})
    failure = inspector.inspect_artefact(Prog())
    assert failure.kind == FailureKind(kind) and failure.reason == f"{reply['reason']} (artefact abc123)"
    assert failure.detail == "the detail" and worker.calls[-1] == "close"


def test_an_inspector_that_fails_is_the_candidates_failure_and_is_closed(monkeypatch):
    from bird.reward.replies import RewardProgramError
    from bird.types import Failure

    worker = _host(monkeypatch, RewardProgramError(Failure(FailureKind.TIMEOUT, "too slow", "trace")))
    failure = inspector.inspect_artefact(Prog())
    assert (failure.kind, failure.reason, failure.detail) == (FailureKind.TIMEOUT, "too slow (artefact abc123)",
                                                              "trace")
    assert worker.calls[-1] == "close"


def test_an_inspector_that_does_not_start_is_a_training_error(monkeypatch):
    from bird.reward.replies import RewardProgramError
    from bird.types import Failure

    _host(monkeypatch, None, RewardProgramError(Failure(FailureKind.RUNTIME_ERROR, "no namespaces")))
    failure = inspector.inspect_artefact(Prog())
    assert (failure.kind, failure.reason) == (FailureKind.TRAIN_ERROR,
                                              "the artefact inspector did not start: no namespaces")


# --- the inspecting process's verdicts, each branch on its own ------------------------------------------------------
def test_the_count_of_operations_is_the_modules_own(good):
    from jax import export

    from bird.reward.artefacts import Expected, check_module

    ops = check_module(export.deserialize(bytearray(good.hlo)), Expected(good.obs_dim, good.act_dim,
                                                                        len(good.components), good.rows))
    assert inspector._inspect(_header(good), bytes(good.hlo)) == {"ok": True, "ops": sum(ops.values())}


def test_an_artefact_without_a_cpu_lowering_is_a_bad_output(good, monkeypatch):
    from bird.reward import artefacts

    monkeypatch.setattr(artefacts, "check_metadata", lambda data, want: ("cuda", "rocm"))
    assert inspector._inspect(_header(good), bytes(good.hlo)) == {
        "ok": False, "kind": "bad_output", "reason": "the artefact has no CPU lowering, which the inspector compiles"}


def test_a_failed_check_keeps_its_kind_and_at_most_500_characters_of_its_reason(good, monkeypatch):
    from bird.reward import artefacts

    def rejected(exp, want):
        raise artefacts.ArtefactError("rejected", "op " + "y" * 600)

    monkeypatch.setattr(artefacts, "check_module", rejected)
    assert inspector._inspect(_header(good), bytes(good.hlo)) == {"ok": False, "kind": "rejected",
                                                                  "reason": ("op " + "y" * 600)[:500]}


def test_a_module_xla_cannot_compile_is_a_runtime_error_with_a_short_reason(good, monkeypatch):
    from bird.reward import artefacts

    monkeypatch.setattr(artefacts, "check_metadata", lambda data, want: ("cpu",))  # the wrong shapes reach the compiler
    monkeypatch.setattr(artefacts, "check_module", lambda exp, want: {"add": 1})
    reply = inspector._inspect(_header(good, obs_dim=good.obs_dim + 1), bytes(good.hlo))
    assert reply["ok"] is False and reply["kind"] == "runtime_error" and set(reply) == {"ok", "kind", "reason"}
    assert reply["reason"].startswith("the artefact does not compile: ") and "Shape mismatch" in reply["reason"]


def test_a_compiler_error_is_cut_to_300_characters(good, monkeypatch):
    import jax

    def jit(fn):
        raise RuntimeError("z" * 400)

    monkeypatch.setattr(jax, "jit", jit)
    reply = inspector._inspect(_header(good), bytes(good.hlo))
    assert reply == {"ok": False, "kind": "runtime_error",
                     "reason": "the artefact does not compile: RuntimeError: " + "z" * 300}


def test_what_breaks_the_inspection_is_cut_to_300_characters(good, monkeypatch):
    def broken(header, payload):
        raise RuntimeError("q" * 400)

    monkeypatch.setattr(inspector, "_inspect", broken)
    assert _main(monkeypatch, _header(good), b"")["reason"] == "the artefact broke the inspection: RuntimeError: " + "q" * 300
