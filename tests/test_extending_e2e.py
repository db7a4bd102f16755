"""docs/extending.md, followed from a folder outside the checkout: examples/extending/ copied there, and only the
documented commands, as subprocesses. The plugin's selection rule and the user's method (method/my_method.yaml on
BIRD_CONFIG_PATH) run to `completed`; a second search, the plugin named on the command line and found through
PYTHONPATH, is SIGKILLed mid-search and resumed with bird.resume; the first is packed into a bundle and replayed;
bird.fidelity, bird.ablate (its printed commands run too) and bird.diff take the plugin's method."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from run_kills import kill_when

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "extending"

# The task every search here runs on, as a config option (env=...) and the overrides that keep it short. The task
# file example, examples/extending/pendulum.yaml, is put on the user's path as env/gym/my_pendulum.yaml (as
# docs/extending.md says), and every search here runs it.
ENV = "gym/my_pendulum"
SHORT = ("env.horizon=100", "budget.env_steps=512", "budget.final_env_steps=512", "verify.call_timeout_s=60",
         "video.record=none", "run.progress=false")


def _bird(args: list[str], cwd: Path, env: dict[str, str], timeout: int = 600) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=timeout)
    assert proc.returncode == 0, f"{args}: rc {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def _result(run: Path) -> dict:
    return json.loads((run / "result.json").read_text())


@pytest.fixture(scope="module")
def user(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """The examples, copied to a folder outside the checkout; the environment the docs set (BIRD_CONFIG_PATH)."""
    folder = tmp_path_factory.mktemp("user")
    shutil.copytree(EXAMPLES, folder / "extending")
    task_file = folder / "extending" / "pendulum.yaml"
    if task_file.exists():
        (folder / "extending" / "env" / "gym").mkdir(parents=True)
        task_file.rename(folder / "extending" / "env" / "gym" / "my_pendulum.yaml")
    assert not (folder / "extending").resolve().is_relative_to(ROOT)
    env = {**os.environ, "BIRD_CONFIG_PATH": str(folder / "extending")}
    env.pop("PYTHONPATH", None)
    return folder / "extending", env


@pytest.fixture(scope="module")
def my_method_run(user) -> Path:
    """`python -m bird method=my_method budget=smoke`, from the user's folder (the plugin imports from there)."""
    folder, env = user
    run = folder / "runs" / "my_method"
    _bird(["bird", "method=my_method", "budget=smoke", f"env={ENV}", *SHORT, f"hydra.run.dir={run}"], folder, env)
    return run


def test_the_users_method_and_plugin_run_to_completed_and_are_recorded(user, my_method_run):
    folder, _ = user
    result = _result(my_method_run)
    assert result["status"] == "completed" and result["method"] == "my_method" and not result["failures"]
    assert result["choices"] == ["four_turn_history", "eureka_obs_code"]  # what the method file composes
    digest = hashlib.sha256((folder / "my_plugin.py").read_bytes()).hexdigest()
    assert [(p["module"], p["source"], p["sha256"]) for p in result["plugins"]] == [("my_plugin", "config", digest)]
    sessions = json.loads((my_method_run / "environment.json").read_text())["sessions"]
    assert [p["module"] for p in sessions[0]["plugins"]] == ["my_plugin"]
    assert "rule: shortest_near_best" in (my_method_run / "config.yaml").read_text()
    # bird.status reads status files only: it needs neither the plugin nor the user's path
    plain = {k: v for k, v in os.environ.items() if k not in ("BIRD_CONFIG_PATH", "PYTHONPATH")}
    status = _bird(["bird.status", str(folder / "runs"), "--json"], ROOT, plain).stdout
    assert json.loads(status)[0]["completed"] >= 1


def test_a_search_killed_mid_way_resumes_with_bird_resume(user, tmp_path):
    folder, env = user
    env = {**env, "PYTHONPATH": str(folder)}  # the plugin found through PYTHONPATH, from another folder
    run = folder / "runs" / "killed"
    kill_when([sys.executable, "-m", "bird", "method=eureka", "plugins=[my_plugin]",
               "select.rule=shortest_near_best", "budget=smoke", f"env={ENV}", *SHORT, "budget.max_candidates=1",
               f"hydra.run.dir={run}"],
              run, '"iteration_done"', tmp_path, env)
    assert not (run / "result.json").exists()
    refused = subprocess.run([sys.executable, "-m", "bird.resume", str(run)], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "plugins=['my_plugin']" in refused.stderr  # a saved config names code: not run
    _bird(["bird.resume", str(run), "plugins=[my_plugin]", "verify.call_timeout_s=60"], tmp_path, env)  # limits: yours
    result = _result(run)
    assert result["status"] == "completed" and [r["from_iteration"] for r in result["resumes"]] == [1]
    assert [p["module"] for p in result["plugins"]] == ["my_plugin"] and not result["failures"]


def test_the_run_packs_into_a_bundle_that_replays_with_the_plugin(user, my_method_run):
    folder, env = user
    bundle = folder / "my_method.bird"
    _bird(["bird.bundle", "pack", str(my_method_run), "--out", str(bundle)], folder, env)
    refused = subprocess.run([sys.executable, "-m", "bird.bundle", "replay", str(bundle), "--out",
                              str(folder / "refused")], capture_output=True, text=True, cwd=folder, env=env,
                             timeout=300)
    assert refused.returncode == 2 and "--plugin my_plugin" in refused.stderr
    _bird(["bird.bundle", "replay", str(bundle), "--out", str(folder / "replayed"), "--plugin", "my_plugin",
           "--set", "verify.call_timeout_s=60"],
          folder, env)
    report = json.loads((folder / "replayed" / "replay_report.json").read_text())
    assert [c["status"] for c in report["cells"]] == ["identical"], report


def test_fidelity_ablate_and_diff_take_the_plugins_method(user, tmp_path):
    folder, env = user
    fidelity = _bird(["bird.fidelity", "my_method", f"env={ENV}"], folder, env).stdout
    assert f"set by {folder / 'method' / 'my_method.yaml'}" in fidelity and "select.rule = shortest_near_best" in fidelity
    diff = _bird(["bird.diff", "eureka", "my_method"], folder, env).stdout
    assert "select.rule" in diff and "'shortest_near_best'" in diff and "plugins" in diff
    sweep = tmp_path / "ablate"
    ablate = _bird(["bird.ablate", "my_method", "--envs", ENV, "--seeds", "0", "--budget", "smoke", "--choices",
                    "global_best_parent", "--sweep-dir", str(sweep), "--run", *SHORT, "budget.max_candidates=1"],
                   folder, env).stdout
    assert "global_best_parent" in ablate
    results = sorted(p.relative_to(sweep).parent.as_posix() for p in sweep.rglob("result.json"))
    assert results == [f"my_method+global_best_parent/{ENV}/seed0", f"my_method/{ENV}/seed0"]
    assert all(_result(sweep / r)["status"] == "completed" for r in results)
