"""A received task section is data (issue 36 x issue 42): a run directory's or bundle's config.yaml, or a task file
from elsewhere than the config search path, may name a registered Gymnasium id and data, never code bird would import
and call or a file it would read into a prompt. Each attack (a stranger's module that marks its import, a source
file holding a secret) is refused before any work by resume, replay, the leak audit and `bird.envs check/describe`;
the positive controls: bird's own task files as received, the user's own task file on BIRD_CONFIG_PATH (same task
section), a plugin the user names, a key given on the command line, --trust-config, and (slow) real gym/pendulum and
gym/hopper_hop_in_place runs that resume and replay."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import uuid
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml
from omegaconf import OmegaConf

from bird.bundle import BundleError, pack, replay
from bird.config.load import CONF_DIR, ConfigError, compose
from bird.resume import main as resume_main
from bird.resume import saved_config

ROOT = Path(__file__).resolve().parents[2]
SMOKE_RUN = ROOT / "tests" / "analysis" / "fixtures" / "smoke_runs" / "mujoco-inverted_pendulum" / "eureka-s0"
SECRET = "sk-victim-SECRET-51c0de"
SMOKE = ["budget=smoke", "run.progress=false", "video.record=none"]
BENCHMARK = {"feedback.fitness": "benchmark_score", "feedback.score_shown": "benchmark_score"}  # hopper has no native

STRANGER = '''
import pathlib

pathlib.Path({marker!r}).write_text("imported")  # what any code of the stranger's could do instead

import gymnasium as gym
import numpy as np


class Env(gym.Env):
    observation_space = gym.spaces.Box(-1.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Box(-2.0, 2.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(3, np.float32), {{}}

    def step(self, action):
        return self._get_obs(), 0.0, False, False, {{}}

    def _get_obs(self):
        return np.zeros(3, np.float32)


class Wrap(gym.Wrapper):
    pass


def still_score(episode):
    return 0.0


def still_success(obs, info):
    return False


def still_reference(obs, action, next_obs, info):
    return 0.0
'''


class Stranger(NamedTuple):
    module: str
    marker: Path


@pytest.fixture
def stranger(tmp_path, monkeypatch):
    """A module of the stranger's that the host can import (`python -m` puts the working folder, e.g. the received
    run directory, first on the path); importing it writes `marker`."""
    name, lib = f"stranger_{uuid.uuid4().hex[:8]}", tmp_path / "lib"
    lib.mkdir()
    marker = tmp_path / "IMPORTED"
    (lib / f"{name}.py").write_text(STRANGER.format(marker=str(marker)))
    monkeypatch.syspath_prepend(str(lib))
    yield Stranger(name, marker)
    sys.modules.pop(name, None)


def _code_keys(module: str) -> dict[str, dict]:
    """Each task key that names code, as the dotted changes that make a received Pendulum task name the module."""
    return {
        "make": {"task.make": f"{module}:Env"},
        "wrappers[0].target": {"task.wrappers": [{"target": f"{module}:Wrap", "kwargs": {}}]},
        "score.function": {"task.score.kind": "function", "task.score.function": f"{module}:still_score"},
        "success.function": {"task.success": {"function": f"{module}:still_success"}},
        "reference_reward": {"task.reference_reward": f"{module}:still_reference"},
        "expert": {"task.expert": f"{module}:still_expert"},
    }


CODE_KEYS = list(_code_keys("m"))


def _env_section(env: str = "gym/pendulum", **changes: object) -> dict:
    """The env section a run of `env` records in config.yaml, with dotted `changes` ("task.make": ...)."""
    cfg = compose([*SMOKE, f"env={env}", *(f"{k}={v}" for k, v in BENCHMARK.items())])
    section = yaml.safe_load(OmegaConf.to_yaml(OmegaConf.structured(cfg.env)))
    section["horizon"] = 5
    for key, value in changes.items():
        node = section
        *parents, last = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return section


def _received_run(root: Path, env: dict, **config: object) -> Path:
    """A recorded smoke run whose config.yaml a stranger gave this env section (and the dotted `config` changes)."""
    run = root / "received"
    shutil.copytree(SMOKE_RUN, run)
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    cfg["env"] = env
    for key, value in {**BENCHMARK, **config}.items():
        node = cfg
        *parents, last = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    (run / "config.yaml").write_text(yaml.safe_dump(cfg))
    return run


def _task_file(path: Path, env: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("# @package env\n" + yaml.safe_dump(env, sort_keys=False))
    return path


def _episode(env_cfg) -> None:
    """What a search does with the env first: build it and run one episode (its score at the end)."""
    from bird.envs.registry import make_adapter

    env = make_adapter(env_cfg).make_env(seed=0)
    env.reset(seed=0)
    done = False
    while not done:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        done = terminated or truncated


@pytest.fixture
def searches(monkeypatch) -> list:
    """bird.loop.search replaced by its first step (the env built, one episode): the configs it was given."""
    import bird.loop

    seen: list = []

    def search(cfg, run_dir):
        seen.append(cfg)
        _episode(cfg.env)

    monkeypatch.setattr(bird.loop, "search", search)
    return seen


# -- the attacks ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", CODE_KEYS)
def test_resume_refuses_a_received_task_naming_code_before_importing_it(tmp_path, stranger, searches, key, capsys):
    changes = _code_keys(stranger.module)[key]
    run = _received_run(tmp_path, _env_section(**changes))
    (run / "result.json").unlink()  # unfinished
    assert resume_main([str(run)]) == 2
    err = capsys.readouterr().err
    assert f"env.task.{key}=" in err and stranger.module in err and "--trust-config" in err, err
    assert not stranger.marker.exists() and searches == []


@pytest.mark.parametrize("key", ["make", "score.function"])  # imported when the config loads; when the env is built
def test_replay_refuses_a_bundle_whose_task_names_code(tmp_path, stranger, searches, key):
    run = _received_run(tmp_path, _env_section(**_code_keys(stranger.module)[key]))
    bundle = tmp_path / "received.bird"
    pack([run], bundle, cache_dir=tmp_path / "cache")
    with pytest.raises(BundleError, match=re.escape(f"env.task.{key}=") + ".*nothing was replayed"):
        replay(bundle, tmp_path / "out")
    assert not stranger.marker.exists() and searches == []


def test_the_leak_audit_refuses_a_received_task_naming_code(tmp_path, stranger):
    from bird.leaks import audit_run
    from bird.leaks import main as leaks_main

    run = _received_run(tmp_path, _env_section(**{"task.make": f"{stranger.module}:Env"}))
    with pytest.raises(ConfigError, match=rf"env\.task\.make='{stranger.module}:Env'"):
        audit_run(run)
    assert leaks_main([str(run)]) == 2
    assert not stranger.marker.exists()


def test_the_leak_audit_reads_a_received_config_as_data(tmp_path, monkeypatch):
    from bird.leaks import audit_run

    monkeypatch.setenv("VICTIM_TOKEN", SECRET)
    run = _received_run(tmp_path, _env_section(**{"task.hidden.names": ["${oc.env:VICTIM_TOKEN}"]}))
    with pytest.raises(ConfigError, match=r"env\.task\.hidden\.names\[0\] hold an interpolation"):
        audit_run(run)


@pytest.mark.parametrize("key", CODE_KEYS)
def test_envs_check_refuses_a_received_task_file_naming_code(tmp_path, stranger, key):
    from bird.envs.__main__ import main as envs_main

    path = _task_file(tmp_path / "downloads" / "task.yaml", _env_section(**_code_keys(stranger.module)[key]))
    with pytest.raises(SystemExit) as exit_:
        envs_main(["check", str(path), "episodes=1"])
    assert f"env.task.{key}=" in str(exit_.value.code) and "--trust-config" in str(exit_.value.code)
    assert not stranger.marker.exists()


@pytest.fixture
def secret_file(tmp_path) -> Path:
    """A Python file of the user's, outside any task folder, holding a secret."""
    path = tmp_path / "home" / "settings.py"
    path.parent.mkdir()
    path.write_text(f'API_KEY = "{SECRET}"\n\n\ndef key():\n    return API_KEY\n')
    return path


def test_a_received_source_file_is_never_read_into_a_prompt(tmp_path, secret_file, capsys):
    from bird.envs.__main__ import main as envs_main
    from bird.envs.registry import make_adapter

    env = _env_section(**{"task.source.file": str(secret_file), "task.source.show": ["full_source"]})
    run = _received_run(tmp_path, env, **{"generate.env_representation": "full_source"})
    with pytest.raises(ConfigError, match=r"env\.task\.source\.file='.*settings\.py'"):
        cfg = saved_config(run)
        assert SECRET not in make_adapter(cfg.env).spec.extra["full_source"]  # what the generator would be shown
    path = _task_file(tmp_path / "downloads" / "task.yaml", env)
    with pytest.raises(SystemExit) as exit_:
        envs_main(["describe", str(path), "view=full_source"])
    assert "env.task.source.file" in str(exit_.value.code)
    assert SECRET not in capsys.readouterr().out


def test_a_received_kwarg_naming_a_path_is_refused(tmp_path):
    env = _env_section("gym/hopper_hop_in_place", **{"task.kwargs": {"xml_file": "/home/user/model.xml"}})
    with pytest.raises(ConfigError, match=r"env\.task\.kwargs\.xml_file='/home/user/model\.xml'"):
        saved_config(_received_run(tmp_path, env))


def test_a_received_loader_id_is_refused(tmp_path, stranger):
    """shimmy's GymV26Environment-v0 makes the old-Gym env its kwargs name: `module:Env` imports the module."""
    env = _env_section(**{"task.make": "GymV26Environment-v0", "task.kwargs": {"env_id": f"{stranger.module}:Env-v0"}})
    with pytest.raises(ConfigError, match=r"env\.task\.make='GymV26Environment-v0'"):
        saved_config(_received_run(tmp_path, env))


def test_a_received_env_id_cannot_name_a_file_outside_the_search_path(tmp_path):
    from bird.config.searchpath import find

    (tmp_path / "evil.yaml").write_text("# @package env\nid: gym/evil\n")
    name = os.path.relpath(tmp_path / "evil", CONF_DIR / "env")
    assert name.startswith("..") and find("env", name) is None


def test_the_epic_benchmark_reads_a_received_contract_as_data(tmp_path, monkeypatch):
    from analysis.epic_bench import _contract

    monkeypatch.setenv("VICTIM_TOKEN", SECRET)
    (tmp_path / "config.yaml").write_text("reward:\n  contract: ${oc.env:VICTIM_TOKEN}\n")
    with pytest.raises(ConfigError, match="hold an interpolation"):
        _contract(tmp_path)


# -- positive controls ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("env", ["gym/pendulum", "gym/hopper_hop_in_place"])
def test_bird_own_task_files_are_data_and_resume_as_received(tmp_path, env):
    from bird.envs.demos import env_config

    notes: list[str] = []
    cfg = saved_config(_received_run(tmp_path, _env_section(env)), notes=notes)
    assert cfg.env.task is not None and not any("env.task" in n for n in notes)
    copy = _task_file(tmp_path / "downloads" / "task.yaml", yaml.safe_load((CONF_DIR / "env" / f"{env}.yaml")
                                                                             .read_text()))
    assert env_config(str(copy)).task == env_config(env).task  # a copy from elsewhere: checked, accepted


def test_every_shipped_task_file_and_metric_is_data():
    """bird's own task files name only data, so a stranger's copy of one is accepted; every metric bird ships for task
    files is a data target, and every data target exists (a wrapper is a gymnasium.Wrapper)."""
    import gymnasium as gym

    import bird.envs.gym.metrics as metrics
    from bird.config.received_task import DATA_TARGETS, named_code
    from bird.envs.gym.episode import load_target

    for path in sorted((CONF_DIR / "env" / "gym").glob("*.yaml")):
        assert named_code(yaml.safe_load(path.read_text())["task"]) == [], path
    assert {f"bird.envs.gym.metrics:{name}" for name in metrics.__all__} <= DATA_TARGETS
    for target in DATA_TARGETS:
        obj = load_target(target, "test")
        assert callable(obj) and (not target.startswith("gymnasium.") or issubclass(obj, gym.Wrapper)), target


def test_data_targets_and_registered_classes_are_accepted_as_received(tmp_path):
    env = _env_section("gym/hopper_hop_in_place", **{
        "task.make": "gymnasium.envs.mujoco.hopper_v5:HopperEnv",  # the class Hopper-v5 registers
        "task.wrappers": [{"target": "gymnasium.wrappers:ClipAction", "kwargs": {}}],
        "task.kwargs": {"xml_file": "hopper.xml"},  # bird opens it in Gymnasium's assets
        "task.source.file": "gymnasium.envs.mujoco.hopper_v5"})
    cfg = saved_config(_received_run(tmp_path, env))
    _episode(cfg.env)


@pytest.fixture
def own_task(tmp_path, stranger, monkeypatch) -> dict:
    """The user's own task file naming their module, on BIRD_CONFIG_PATH as env/gym/my_still.yaml."""
    env = _env_section(**{"id": "gym/my_still", **_code_keys(stranger.module)["make"],
                          **_code_keys(stranger.module)["score.function"]})
    _task_file(tmp_path / "mine" / "env" / "gym" / "my_still.yaml", env)
    monkeypatch.setenv("BIRD_CONFIG_PATH", str(tmp_path / "mine"))
    return env


def test_the_users_own_task_file_resumes_replays_and_is_audited(tmp_path, stranger, own_task, searches):
    from bird.envs.demos import env_config
    from bird.leaks import audit_run

    notes: list[str] = []
    run = _received_run(tmp_path, own_task)
    assert saved_config(run, notes=notes).env.task.make == f"{stranger.module}:Env"
    assert [n for n in notes if "env.task" in n] == [
        f"env.task names code or files (env.task.make='{stranger.module}:Env', env.task.score.function="
        f"'{stranger.module}:still_score'): the task section of your own {tmp_path}/mine/env/gym/my_still.yaml, accepted"]
    assert audit_run(run) == []
    bundle = tmp_path / "mine.bird"
    pack([run], bundle, cache_dir=tmp_path / "cache")
    replay(bundle, tmp_path / "out")
    assert len(searches) == 1 and stranger.marker.exists()
    copy = _task_file(tmp_path / "downloads" / "task.yaml", own_task)  # the same file elsewhere: yours by its id
    assert env_config(str(copy)).task == env_config("gym/my_still").task


def test_a_changed_copy_of_the_users_own_task_is_refused(tmp_path, stranger, own_task):
    changed = {**own_task, "task": {**own_task["task"], "kwargs": {"seed_offset": 1}}}
    with pytest.raises(ConfigError, match=rf"env\.task\.make='{stranger.module}:Env'"):
        saved_config(_received_run(tmp_path, changed))
    assert not stranger.marker.exists()


def test_a_task_naming_code_is_accepted_when_the_user_vouches_for_it(tmp_path, stranger):
    run = _received_run(tmp_path, _env_section(**_code_keys(stranger.module)["make"]))
    notes: list[str] = []
    assert saved_config(run, ["env.task.make=Pendulum-v1"]).env.task.make == "Pendulum-v1"  # replaced: no code
    assert not stranger.marker.exists()
    data = _received_run(tmp_path / "data", _env_section())
    assert saved_config(data, [f"env.task.make={stranger.module}:Env"]).env.task.make == f"{stranger.module}:Env"
    assert saved_config(run, [f"plugins=[{stranger.module}]"]).plugins == [stranger.module]  # a plugin you name
    assert saved_config(run, trust=True, notes=notes).env.task.make == f"{stranger.module}:Env"
    assert notes == [f"env.task names code or files (env.task.make='{stranger.module}:Env'): taken as received "
                     "(--trust-config)"]


# -- positive controls, end to end ---------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("env,extra", [
    ("gym/pendulum", []),
    ("gym/hopper_hop_in_place", ["feedback.fitness=benchmark_score", "feedback.score_shown=benchmark_score"])])
def test_shipped_gym_runs_resume_and_replay_unchanged(tmp_path, env, extra):
    """A real smoke search on each shipped task file: its run directory resumes (the returned reward retrained again
    from the checkpoint) and its bundle replays identical."""
    from bird.loop import search

    run = tmp_path / "run"
    search(compose([*SMOKE, f"env={env}", "method=eureka", "env.horizon=100", "budget.env_steps=512",
                    "budget.final_env_steps=512", "budget.max_candidates=1", "verify.call_timeout_s=60", *extra]), run)
    first = json.loads((run / "result.json").read_text())
    assert first["status"] == "completed"
    bundle = tmp_path / "run.bird"
    pack([run], bundle)
    report = replay(bundle, tmp_path / "replayed", overrides=["verify.call_timeout_s=60"])
    assert [c.status for c in report.cells] == ["identical"], report.cells
    (run / "result.json").unlink()
    assert resume_main([str(run), "verify.call_timeout_s=60"]) == 0
    again = json.loads((run / "result.json").read_text())
    assert again["status"] == "completed" and again["returned_score"] == first["returned_score"]
