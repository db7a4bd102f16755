"""A received config is data, never authority (issue 42): when bird resumes a run directory or replays a bundle, its
endpoints, credentials and paths come from this machine, a looser sandbox limit stops the command (naming
--trust-config), and an interpolation in it is never resolved; a user's own `${oc.env:...}` override naming a secret
is refused before anything is written. Each attack has its positive control: one's own resume and replay, with the
values given on the command line or --trust-config."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml
from llm.fake_servers import FakeLLMServer

from bird.bundle import BundleError, pack, replay
from bird.config.load import ConfigError
from bird.resume import main as resume_main
from bird.resume import saved_config

ROOT = Path(__file__).resolve().parents[2]
SMOKE_RUN = ROOT / "tests" / "analysis" / "fixtures" / "smoke_runs" / "mujoco-inverted_pendulum" / "eureka-s0"
SECRET = "sk-victim-SECRET-9d1e77"


def _received_run(root: Path, **changes: object) -> Path:
    """A copy of a recorded smoke run whose config.yaml a stranger changed (dotted key -> value)."""
    run = root / "received"
    shutil.copytree(SMOKE_RUN, run)
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    for key, value in changes.items():
        node = cfg
        *parents, last = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    (run / "config.yaml").write_text(yaml.safe_dump(cfg))
    return run


def _bundle(root: Path, **changes: object) -> Path:
    run = _received_run(root, **changes)
    out = root / "received.bird"
    pack([run], out, cache_dir=root / "cache")  # as a stranger's packer would: no reading of the config it forged
    return out


# -- resume: endpoints and credentials ----------------------------------------------------------------------------
def _server_answers(body: dict) -> str:
    return "no program here"  # every candidate fails to parse: the search ends without training


def test_resume_sends_no_secret_to_the_endpoint_a_run_directory_names(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("VICTIM_TOKEN", SECRET)
    with FakeLLMServer("openai", _server_answers) as srv:
        run = _received_run(tmp_path, **{"llm.backend": "openai", "llm.model": "any", "llm.cache": "off",
                                         "llm.base_url": srv.base_url, "llm.api_key_env": "VICTIM_TOKEN"})
        (run / "result.json").unlink()  # unfinished: resume starts it over
        assert resume_main([str(run)]) == 2  # this machine has no OPENAI_API_KEY: refused before any request
        assert srv.requests == [] and not any(SECRET in str(h) for h in srv.headers)
    err = capsys.readouterr().err
    assert f"llm.base_url: the received '{srv.base_url}' is ignored; the local None is used" in err
    assert "llm.api_key_env: the received 'VICTIM_TOKEN' is ignored" in err and "--trust-config" in err


def test_ones_own_resume_uses_the_endpoint_given_again_or_trusted(tmp_path, monkeypatch):
    monkeypatch.setenv("MY_TOKEN", SECRET)
    with FakeLLMServer("openai", _server_answers) as srv:
        run = _received_run(tmp_path, **{"llm.backend": "openai", "llm.model": "any", "llm.cache": "off",
                                         "llm.base_url": srv.base_url, "llm.api_key_env": "MY_TOKEN",
                                         "budget.max_iterations": 1})
        (run / "result.json").unlink()
        assert resume_main([str(run), "--trust-config"]) == 1  # the server answers no program: nothing trains
        assert srv.requests and all(h.get("authorization") == f"Bearer {SECRET}" for h in srv.headers)
    result = json.loads((run / "result.json").read_text())
    assert result["status"] == "failed" and result["failures"] == {"parse_error": len(srv.requests)}


def test_a_received_limit_looser_than_this_machines_stops_the_resume(tmp_path, capsys):
    run = _received_run(tmp_path, **{"verify.call_timeout_s": 3000.0, "train.jax.trainer_memory_mb": 0})
    assert resume_main([str(run)]) == 2
    err = capsys.readouterr().err
    assert "verify.call_timeout_s=3000.0 (local 5.0)" in err and "train.jax.trainer_memory_mb=0 (local 16384)" in err
    assert "--trust-config" in err
    assert saved_config(run, ["verify.call_timeout_s=3000", "train.jax.trainer_memory_mb=0"]).verify.call_timeout_s \
        == 3000  # given on the command line: the user's own choice
    notes: list[str] = []
    strict = _received_run(tmp_path / "strict", **{"verify.call_timeout_s": 1.0})
    assert saved_config(strict, notes=notes).verify.call_timeout_s == 1.0  # stricter: kept, and reported
    assert notes == ["verify.call_timeout_s: the received 1.0 is kept (stricter than the local 5.0)"]


# -- interpolations and secrets -----------------------------------------------------------------------------------
def test_an_interpolation_in_a_received_config_is_refused_never_resolved(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    bundle = _bundle(tmp_path, **{"llm.model": "${oc.env:OPENAI_API_KEY}"})
    with pytest.raises(BundleError, match=r"llm.model hold an interpolation .*bird resolves nothing"):
        replay(bundle, tmp_path / "out")
    run = _received_run(tmp_path / "dir", **{"env.description": "${oc.env:HOME}"})
    assert resume_main([str(run)]) == 2 and "env.description hold an interpolation" in capsys.readouterr().err
    written = [p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert not any(SECRET.encode() in data for data in written)


@pytest.mark.parametrize("variable", ["OPENAI_API_KEY", "MY_ALIAS"])
def test_an_override_that_interpolates_a_secret_is_refused(compose_cfg, monkeypatch, variable):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("MY_ALIAS", SECRET)  # another name for the same secret
    with pytest.raises(ConfigError) as err:
        compose_cfg(f"llm.model=${{oc.env:{variable}}}")
    assert f"llm.model: an interpolation of the environment variable {variable}" in str(err.value)
    assert SECRET not in str(err.value)
    assert compose_cfg("env.description=${oc.env:HOME}").env.description == os.environ["HOME"]  # not a secret


# -- replay: the Done-when of issue 42 ----------------------------------------------------------------------------
class _Listener:
    """A TCP port that counts the connections made to it (a Ray head a bundle names)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port, self.accepted = self.sock.getsockname()[1], 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted += 1
            conn.close()


def _cli_replay(bundle: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if "KEY" not in k}
    return subprocess.run([sys.executable, "-m", "bird.bundle", "replay", str(bundle), "--out", str(out), *extra],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)


def test_replay_keeps_the_local_sandbox_limit_over_a_bundles_larger_one(tmp_path):
    bundle = _bundle(tmp_path, **{"verify.call_timeout_s": 3000.0})
    proc = _cli_replay(bundle, tmp_path / "out")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "verify.call_timeout_s=3000.0 (local 5.0)" in proc.stderr and "--trust-config" in proc.stderr
    assert "nothing was replayed" in proc.stderr
    assert not list((tmp_path / "out").glob("eureka*"))  # no cell ran


def test_replay_takes_a_limit_given_on_its_command_line_or_trusted(tmp_path, monkeypatch):
    import bird.loop

    seen = []

    def search(cfg, target):
        seen.append(cfg)
        raise RuntimeError("the search itself is not what is tested here")

    monkeypatch.setattr(bird.loop, "search", search)
    bundle = _bundle(tmp_path, **{"verify.call_timeout_s": 30.0, "ray.address": "ray://10.0.0.1:10001",
                                  "llm.base_url": "http://127.0.0.1:9/v1"})
    replay(bundle, tmp_path / "a", overrides=["verify.call_timeout_s=30"])
    report = replay(bundle, tmp_path / "b", trust_config=True)
    assert [c.verify.call_timeout_s for c in seen] == [30.0, 30.0]
    assert [c.ray.address for c in seen] == [None, "ray://10.0.0.1:10001"]
    # under llm.cache=replay no client is built: the recorded server stays part of the answers' keys
    assert [(c.llm.cache, c.llm.base_url) for c in seen] == [("replay", "http://127.0.0.1:9/v1")] * 2
    assert any("ray.address: the received 'ray://10.0.0.1:10001' is used" in n for n in report.cells[0].config_notes)


@pytest.mark.slow
def test_replay_of_a_bundle_naming_a_ray_address_makes_no_connection(tmp_path):
    ray_head = _Listener()
    bundle = _bundle(tmp_path, **{"train.executor": "ray", "ray.address": f"ray://127.0.0.1:{ray_head.port}"})
    out = tmp_path / "out"
    proc = _cli_replay(bundle, out)
    assert ray_head.accepted == 0
    assert "ray.address: the received" in proc.stdout and "train.executor: the received 'ray'" in proc.stdout
    report = json.loads((out / "replay_report.json").read_text())
    [cell] = report["cells"]
    # the replay still runs to the end (the fixture was recorded by an earlier bird: its numbers may differ)
    assert cell["status"] != "failed", (cell, proc.stderr[-2000:])
    assert json.loads((out / cell["id"] / "result.json").read_text())["status"] == "completed"
    replayed = yaml.safe_load((out / cell["id"] / "config.yaml").read_text())
    assert replayed["ray"]["address"] is None and replayed["train"]["executor"] == "local"


def test_replay_help_states_which_received_values_it_ignores(capsys):
    from bird.bundle.__main__ import main as bundle_main

    with pytest.raises(SystemExit):
        bundle_main(["replay", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "These recorded values are ignored, this machine's used instead" in text
    for key in ("ray.address", "train.executor", "llm.cache_dir", "verify.call_timeout_s", "--trust-config"):
        assert key in text
