"""A sandbox that cannot start on this machine stops a search before any LLM call or training (bird.reward.factory)."""

import json

import pytest

import bird.loop
from bird.reward import factory
from bird.reward.sandbox import SandboxSetupError


def test_a_search_whose_sandbox_cannot_start_fails_before_any_llm_call(compose_cfg, tmp_path, monkeypatch):
    def refuse(language):
        raise SandboxSetupError(f"the reward sandbox cannot start: cannot read /x ({language})")

    monkeypatch.setattr(bird.loop, "preflight", refuse)
    with pytest.raises(SandboxSetupError):
        bird.loop.search(compose_cfg("env=mujoco/hopper"), tmp_path)
    status = json.loads((tmp_path / "status.json").read_text())
    assert status["state"] == "failed" and "cannot read /x (numpy)" in status["error"]
    assert not (tmp_path / "llm_calls.jsonl").exists() and not (tmp_path / "task.json").exists()


def test_preflight_starts_one_worker_per_language_per_process(monkeypatch):
    started = []

    class Worker:
        def __init__(self, language, memory_mb, call_timeout_s):
            started.append(language.name)

        def close(self):
            pass

    monkeypatch.setattr(factory, "WorkerProcess", Worker)
    monkeypatch.setattr(factory, "_READY", set())
    for _ in range(3):
        factory.preflight("numpy")
    assert started == ["numpy"]


def test_preflight_starts_a_real_worker():
    factory.preflight("numpy")  # the real worker with every layer; raises SandboxSetupError where it cannot start
    assert "numpy" in factory._READY
