"""Reward programs are untrusted: static rejections with reasons, runtime limits, output checks, the check CLI."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bird.config.schema import EnvConfig
from bird.envs.registry import make_adapter
from bird.reward.sandbox import RewardProgramError, SandboxedReward
from bird.reward.static import check_source
from bird.types import FailureKind

ROOT = Path(__file__).resolve().parents[1]
HEAD = "import numpy as np\n\ndef compute_reward(obs, action, next_obs, info):\n"
CLEAN = HEAD + '    v = next_obs["rootx_vel"]\n    c = -0.01 * np.sum(action ** 2, axis=-1)\n    return v + c, {"v": v, "c": c}\n'


@pytest.fixture(scope="module")
def obs_index():
    return make_adapter(EnvConfig(id="mujoco/hopper", description="x")).spec.obs_index


@pytest.mark.parametrize(
    "body, reason",
    [
        ("import os\n" + HEAD + "    return 0, {}\n", "processes"),
        ("import subprocess\n" + HEAD + "    return 0, {}\n", "processes"),
        ("import socket\n" + HEAD + "    return 0, {}\n", "network"),
        ("from urllib import request\n" + HEAD + "    return 0, {}\n", "network"),
        ("import pathlib\n" + HEAD + "    return 0, {}\n", "files"),
        (HEAD + "    open('/etc/passwd')\n    return 0, {}\n", "files"),
        (HEAD + "    np.load('x.npy')\n    return 0, {}\n", "files"),
        (HEAD + "    return ().__class__, {}\n", "dunder"),
        (HEAD + "    return info['success'], {}\n", "success flag"),
        (HEAD + "    return info.get('is_success'), {}\n", "success flag"),
        (HEAD + "    return info['reward_forward'], {}\n", "reference reward"),
        (HEAD + "    return eval('1'), {}\n", "dynamic code"),
    ],
)
def test_static_check_rejects_with_a_clear_reason(body, reason):
    failure = check_source(body)
    assert failure is not None and failure.kind == FailureKind.REJECTED
    assert reason in failure.reason


def test_static_check_reports_syntax_and_signature_problems():
    assert check_source("def compute_reward(obs:\n").kind == FailureKind.COMPILE_ERROR
    assert check_source("def other(obs, action, next_obs, info):\n    return 0, {}\n").kind == FailureKind.BAD_SIGNATURE
    assert check_source("def compute_reward(obs):\n    return 0, {}\n").kind == FailureKind.BAD_SIGNATURE


def test_clean_program_runs_in_the_sandbox(obs_index):
    assert check_source(CLEAN) is None
    obs = np.random.default_rng(0).normal(size=(5, obs_index.dim))
    act = np.ones((5, 3))
    with SandboxedReward(CLEAN, obs_index) as program:
        reward, comps = program(obs, act, obs)
    assert reward.shape == (5,) and set(comps) == {"v", "c"}
    np.testing.assert_allclose(reward, obs[:, 5] - 0.03)


def test_non_ascii_identifiers_name_components_and_an_aliased_entry_runs(obs_index):
    """Component names are Python identifiers of any script (not only ASCII); the entry may be an alias."""
    code = ("def vitesse(obs, action, next_obs, info):\n    v = next_obs['rootx_vel']\n"
            "    return v, {'vitesse_é': v, '速度': v, 'hauteur_θ': next_obs['rootz_pos']}\n\ncompute_reward = vitesse\n")
    assert check_source(code) is None
    obs = np.random.default_rng(0).normal(size=(4, obs_index.dim))
    with SandboxedReward(code, obs_index) as program:
        _, comps = program(obs, np.ones((4, 3)), obs)
    assert list(comps) == ["vitesse_é", "速度", "hauteur_θ"]
    with pytest.raises(RewardProgramError) as err, SandboxedReward(HEAD + "    return 0.0 * next_obs['rootx_vel'], "
                                                                    "{'a b': next_obs['rootx_vel']}\n", obs_index) as program:
        program(obs, np.ones((4, 3)), obs)
    assert "'a b' is not a Python identifier (it holds ' ')" in err.value.failure.reason


@pytest.mark.parametrize(
    "body, kind",
    [
        (HEAD + "    while True:\n        pass\n", FailureKind.TIMEOUT),
        (HEAD + "    return next_obs['rootx_vel'] / 0.0, {}\n", FailureKind.NON_FINITE),
        (HEAD + "    return next_obs['nope'], {}\n", FailureKind.RUNTIME_ERROR),
        (HEAD + "    return 1.0, {}\n", FailureKind.BAD_OUTPUT),
        (HEAD + "    return next_obs['rootx_vel']\n", FailureKind.BAD_OUTPUT),
        # 3.2 GB: this machine has it, the 2048 MiB address-space limit does not (and the reason names the limit)
        (HEAD + "    x = np.empty(400_000_000)\n    x.fill(1.0)\n    return x, {}\n", FailureKind.RUNTIME_ERROR),
        ("import os\n" + HEAD + "    return 0, {}\n", FailureKind.REJECTED),  # static checks always run first
        (HEAD + "    return (lambda: 0).__globals__, {}\n", FailureKind.REJECTED),
    ],
)
def test_runtime_failures_are_recorded_with_their_kind(obs_index, body, kind):
    obs = np.zeros((3, obs_index.dim))
    with pytest.raises(RewardProgramError) as err, SandboxedReward(body, obs_index, call_timeout_s=1.0) as program:
        program(obs, np.zeros((3, 3)), obs)
    assert err.value.failure.kind == kind
    if "400_000_000" in body:
        assert "the memory limit fired (address space, memory_mb=2048 MiB)" in err.value.failure.reason


def test_worker_refuses_imports_outside_the_allowlist_even_without_static_checks(obs_index):
    import bird.reward.sandbox as sandbox

    original = sandbox.check_source
    sandbox.check_source = lambda code, entry, **kw: None  # simulate a static-check bypass
    try:
        with pytest.raises(RewardProgramError) as err:
            SandboxedReward("import os\n" + HEAD + "    return 0, {}\n", obs_index)
    finally:
        sandbox.check_source = original
    assert err.value.failure.kind == FailureKind.RUNTIME_ERROR and "not allowed" in err.value.failure.reason


def test_worker_cannot_write_files_or_see_api_keys_even_with_the_real_builtins(obs_index, tmp_path, monkeypatch):
    """A program that got hold of the real builtins (static checks bypassed, walk through numpy's internals) tries
    to write a file and to read the host's environment; both fail, and the worker's own environment is empty."""
    import bird.reward.sandbox as sandbox

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    monkeypatch.setattr(sandbox, "check_source", lambda *a, **k: None)
    tmp_path.chmod(0o777)
    target = tmp_path / "leak.txt"
    real = "np.vectorize.__init__.__globals__['__builtins__']"
    writer = HEAD + f"    {real}['open']({str(target)!r}, 'w').write('x')\n    return next_obs['rootx_vel'], {{}}\n"
    reader = HEAD + (f"    os = {real}['__import__']('os')\n"
                     "    return next_obs['rootx_vel'], {os.read(os.open(f'/proc/{os.getppid()}/environ', 0), 9999)"
                     ".decode(): next_obs['rootx_vel']}\n")
    batch = (np.zeros((2, obs_index.dim)), np.zeros((2, 3)), np.zeros((2, obs_index.dim)))
    for code in (writer, reader):
        with pytest.raises(RewardProgramError) as err, SandboxedReward(code, obs_index) as program:
            environ = Path(f"/proc/{program._worker.proc.pid}/environ").read_bytes()
            program(*batch)
        # refused by the OS: not in its tree (ENOENT; its parent is its pid namespace's init), else Landlock (EACCES)
        assert err.value.failure.reason.startswith(("PermissionError", "FileNotFoundError")), err.value.failure
        assert b"sk-test-secret" not in environ and "sk-test-secret" not in str(err.value.failure)
    assert not target.exists()


def test_module_level_code_runs_under_the_per_call_limit_and_the_message_names_it(obs_index):
    with pytest.raises(RewardProgramError) as err:
        SandboxedReward("while True:\n    pass\n" + CLEAN, obs_index, call_timeout_s=1.0)
    assert err.value.failure.kind == FailureKind.TIMEOUT
    assert err.value.failure.reason == ("module-level code exceeded the per-call time limit (call_timeout_s=1 s, "
                                        "wall clock)")
    with pytest.raises(RewardProgramError) as err, SandboxedReward(HEAD + "    while True:\n        pass\n",
                                                                  obs_index, call_timeout_s=1.0) as program:
        program(np.zeros((2, obs_index.dim)), np.zeros((2, 3)), np.zeros((2, obs_index.dim)))
    assert err.value.failure.reason.startswith("reward program exceeded the per-call time limit (call_timeout_s=1 s")


def _check_cli(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bird.reward", "check", str(path), "env=mujoco/hopper"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_check_explain_lists_every_layer_and_all_are_active_here():
    proc = subprocess.run([sys.executable, "-m", "bird.reward", "check", "--explain"], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    from bird.reward.isolation import LAYERS

    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in (*LAYERS, "host_non_dumpable", "process_group_kill", "result_channel", "python_wall"):
        assert f"[active] {name} " in proc.stdout
    assert "INACTIVE" not in proc.stdout and proc.stdout.strip().endswith("all layers active")


def test_check_cli_accepts_a_clean_program_and_rejects_file_and_os_access(tmp_path):
    good, bad_os, bad_file = tmp_path / "good.py", tmp_path / "os.py", tmp_path / "file.py"
    good.write_text(CLEAN)
    bad_os.write_text("import os\n" + HEAD + "    return next_obs['rootx_vel'], {}\n")
    bad_file.write_text(HEAD + "    open('x')\n    return next_obs['rootx_vel'], {}\n")
    proc = _check_cli(good)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["valid"] is True
    assert json.loads(proc.stdout)["isolation"] == {"inactive_layers": {}}
    for path in (bad_os, bad_file):
        proc = _check_cli(path)
        assert proc.returncode == 1
        verdict = json.loads(proc.stdout)
        assert verdict["valid"] is False and verdict["failure"]["kind"] == "rejected"
