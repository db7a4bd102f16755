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
    monkeypatch.setattr(worker, "start_configured", lambda fd: (session, isolation.IsolationConfig(
        memory_mb=0, call_timeout_s=1.0, host_pid=0)))
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
