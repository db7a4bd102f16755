"""Tasks as files (the gym suite, docs/task_files.md) and the task checker (`python -m bird.envs check`): every shipped
task passes it; broken task files fail it naming the field; the settings a task cannot serve are refused when the
config loads, naming the key and what is allowed."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import yaml

from bird.config.load import CONF_DIR, ConfigError, compose
from bird.envs.check import check_task, describe_task
from bird.envs.demos import available_envs, env_config
from bird.envs.registry import make_adapter

ROOT = Path(__file__).resolve().parents[2]
PENDULUM = CONF_DIR / "env" / "gym" / "pendulum.yaml"

# a user module a task file names: a score that returns NaN, a success test, and an env class that renders nothing
USER_MODULE = '''
import math

import gymnasium as gym
import numpy as np


def nan_score(episode):
    return math.nan


class Still(gym.Env):
    """A point that never moves: 2-d observation, 1-d action, no render modes."""

    metadata = {"render_modes": []}
    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 0.0, False, False, {"at_goal": True}
'''


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    """The env/gym/ folder of a config folder outside the checkout, on BIRD_CONFIG_PATH (a task file there naming the
    user's code is the user's own: docs/security.md), with the user module on the import path."""
    (tmp_path / "my_task_lib.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("BIRD_CONFIG_PATH", str(tmp_path))
    (tmp_path / "env" / "gym").mkdir(parents=True)
    return tmp_path / "env" / "gym"


def task_file(folder: Path, name: str = "broken", **changes) -> Path:
    """Pendulum's task file with `changes` ({"task.score.kind": ...} dotted keys) written to folder/name.yaml."""
    node = yaml.safe_load(PENDULUM.read_text())
    for key, value in changes.items():
        *parents, last = key.split(".")
        target = node
        for p in parents:
            target = target[p]
        target[last] = value
    path = folder / f"{name}.yaml"
    path.write_text("# @package env\n" + yaml.safe_dump(node, sort_keys=False))
    return path


def _problems(path: Path) -> str:
    report = check_task(env_config(str(path)), episodes=1)
    return "\n".join(str(p) for p in report.problems)


# -- the checker ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("env", [pytest.param(t, marks=pytest.mark.background("brax_envs")) if t.startswith("brax/")
                                 else t for t in available_envs()])
def test_the_checker_passes_every_shipped_task(env):
    """Every task of every suite, at a 50-step horizon and one episode (a Brax task's report comes from the job that
    traced its programs: tests/task_checks.py)."""
    import background
    from task_checks import check_report, report_path

    if env.startswith("brax/"):
        background.result("brax_envs")
        report = json.loads(report_path(env).read_text())
    else:
        report = check_report(env)
    assert report["ok"], "\n".join(report["problems"])
    assert any("native signal" in n for n in report["notes"])


def test_the_checker_names_the_gap_a_field_slice_leaves(tmp_path):
    path = task_file(tmp_path, **{"task.fields": [
        {"name": "cos_theta", "slice": [0, 1], "kind": "angle_cos"},
        {"name": "theta_dot", "slice": [2, 3], "kind": "angular_velocity"}]})
    found = _problems(path)
    assert "[env.task.fields] env.task.fields: slots [1, 2) are in no field (the gap before 'theta_dot')" in found


def test_the_checker_names_a_score_that_returns_nan(user_dir):
    path = task_file(user_dir, **{"task.score.kind": "function", "task.score.function": "my_task_lib:nan_score"})
    found = _problems(path)
    assert "[env.task.score] episode 0: the score's quantity is nan" in found


def test_the_checker_names_a_success_key_the_env_does_not_set(tmp_path):
    path = task_file(tmp_path, **{"task.success": {"info_key": "is_success"}})
    found = _problems(path)
    assert "[env.task.success.info_key] episode 0 failed" in found and "'is_success': the env's info has no such key" \
        in found


def test_the_checker_names_a_hidden_name_the_prompt_shows(tmp_path):
    path = task_file(tmp_path, description="Keep the pendulum upright; angle_normalize tells how far it is off.")
    found = _problems(path)
    assert "[env.description] the task description view names angle_normalize" in found
    # the same name left in the env source a full_source prompt shows: named at source.remove
    found = _problems(task_file(tmp_path, "kept", **{"task.source.remove": []}))
    assert "[env.task.source.remove] the env_representation full_source view names angle_normalize" in found


def test_the_checker_measures_a_missing_anchor_and_says_where_it_goes(tmp_path):
    found = _problems(task_file(tmp_path, **{"task.score.random": None}))
    assert "[env.task.score.random] the uniform-random policy's quantity is not set" in found


def test_check_exits_non_zero_on_a_broken_file_and_zero_on_a_good_one(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    bad = task_file(tmp_path, **{"task.fields": [{"name": "theta_dot", "slice": [2, 3]}]})
    proc = subprocess.run([sys.executable, "-m", "bird.envs", "check", str(bad)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 1 and "PROBLEM [env.task.fields]" in proc.stdout and "fix:" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "bird.envs", "check", str(PENDULUM)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert proc.returncode == 0 and proc.stdout.rstrip().endswith("gym/pendulum: ok"), proc.stdout + proc.stderr


def test_describe_shows_what_a_generator_sees_and_nothing_hidden():
    text = describe_task(env_config("gym/pendulum"))
    for shown in ("Swing the pendulum up", 'obs["cos_theta"]', "def _get_obs(self):", "== env_representation obs_code"):
        assert shown in text
    for hidden in ("costs", "angle_normalize", "-1197", "score"):
        assert hidden not in text


# -- the task file as an env ---------------------------------------------------------------------------------------
def test_pendulum_scores_gymnasiums_return_from_the_random_anchor():
    """score = (return - random) / |random|: a random policy near 0; the reference reward is Gymnasium's own."""
    import gymnasium as gym

    adapter = make_adapter(env_config("gym/pendulum"))
    env, raw = adapter.make_env(seed=3), gym.make("Pendulum-v1")
    env.reset(seed=3)
    raw.reset(seed=3)
    total = 0.0
    for _ in range(200):
        action = env.action_space.sample()
        _, reward, _, truncated, info = env.step(action)
        total += reward
        assert reward == pytest.approx(raw.step(action)[1])
    assert truncated and info["bird_episode"]["quantity"] == pytest.approx(total)
    assert info["bird_episode"]["score"] == pytest.approx((total + 1197.18) / 1197.18)


def test_a_task_without_a_reference_reward_gives_nan_step_rewards_and_scores_its_metric():
    adapter = make_adapter(env_config("gym/hopper_hop_in_place"))
    env = adapter.make_env(seed=0)
    env.reset(seed=0)
    rewards = []
    while True:
        _, reward, terminated, truncated, info = env.step(env.action_space.sample())
        rewards.append(reward)
        if terminated or truncated:
            break
    assert all(math.isnan(r) for r in rewards)  # Hopper's own reward pays forward speed: not this task's reward
    assert np.isfinite(info["bird_episode"]["quantity"])


def test_fields_are_derived_from_the_space_with_names_the_file_overrides(tmp_path):
    path = task_file(tmp_path, **{"task.fields": [], "task.rename": {"obs_2": "spin"}, "task.source.show": []})
    fields = make_adapter(env_config(str(path))).spec.obs_index.fields
    assert [(f.name, f.start, f.size) for f in fields] == [("obs_0", 0, 1), ("obs_1", 1, 1), ("spin", 2, 1)]
    assert fields[2].description == "observation entry 2, in [-8, 8]"


# -- refused when the config loads ---------------------------------------------------------------------------------
def _refused(*overrides: str) -> str:
    with pytest.raises(ConfigError) as err:
        compose(list(overrides))
    return str(err.value)


def test_an_unknown_task_of_any_suite_is_refused_naming_the_available_ones():
    assert "env.id='mujoco/pendulum': unknown mujoco task 'pendulum'; available: ['ant', 'half_cheetah'" in _refused(
        "env=mujoco/hopper", "env.id=mujoco/pendulum")
    assert "unknown brax task 'pendulum'" in _refused("env=brax/ant", "env.id=brax/pendulum")
    assert "unknown metaworld task 'pendulm'" in _refused("env=metaworld/push", "env.id=metaworld/pendulm")
    assert "env.id='gym/pendulum2': a gym-suite task is a task file" in _refused(
        "env=mujoco/hopper", "env.id=gym/pendulum2")


def test_a_view_the_task_does_not_offer_is_refused_with_the_allowed_ones():
    found = _refused("env=gym/pendulum", "env.task.source.show=[]", "generate.env_representation=full_source")
    assert "generate.env_representation='full_source': suite 'gym' has no such view of its tasks (gym/pendulum offers " \
           "['obs_index', 'class_abstraction'])" in found
    assert "generate.env_representation='abstraction'" in _refused("env=mujoco/hopper",
                                                                    "generate.env_representation=abstraction")


def test_native_and_reference_signals_are_refused_on_a_task_without_a_reference_reward():
    found = _refused("method=eureka", "env=gym/hopper_hop_in_place")
    assert "feedback.fitness=native (here: reference_return) needs a reference reward, and task " \
           "gym/hopper_hop_in_place has none" in found
    assert "feedback.score_shown=native (here: reference_return) needs a reference reward" in found
    assert "feedback.score_shown=reference_return needs a reference reward" in _refused(
        "env=gym/hopper_hop_in_place", "feedback.fitness=benchmark_score", "feedback.score_shown=reference_return")
    assert "train.reward_source=reference needs a reference reward" in _refused(
        "env=gym/hopper_hop_in_place", "feedback.fitness=benchmark_score", "feedback.score_shown=benchmark_score",
        "train.reward_source=reference")
    ok = compose(["method=eureka", "env=gym/hopper_hop_in_place", "+choice=benchmark_score_fitness",
                  "feedback.score_shown=benchmark_score"])
    assert ok.env.task is not None and ok.env.task.reference_reward == "none"


def test_score_shown_native_on_a_suite_without_a_native_signal_is_refused_naming_score_shown(monkeypatch):
    """A user's registered suite that declares no native signal: refused at load, naming feedback.score_shown (not
    feedback.fitness, and not after training)."""
    from bird.envs.registry import Suite
    from bird.registry import _DECLARED, _REGISTRY

    suite = Suite(lambda task, cfg: None)
    monkeypatch.setitem(_REGISTRY["suite"], "toy", suite)
    monkeypatch.setitem(_DECLARED["suite"], "toy", suite)
    found = _refused("env=mujoco/hopper", "env.id=toy/x", "feedback.fitness=benchmark_score",
                     "feedback.score_shown=native")
    assert "feedback.score_shown='native': native: no native signal for suite 'toy'" in found
    assert "feedback.fitness" not in found


def test_what_a_method_needs_of_a_task_is_refused_where_the_task_lacks_it(user_dir):
    assert "demos.enabled=true with demos.expert=scripted: this configuration learns from scripted-expert " \
           "demonstrations, and suite 'gym' has no scripted expert policy for gym/pendulum" in _refused(
               "method=grace", "env=gym/pendulum", "demos.expert=scripted")
    found = _refused("method=prm4rl", "env=mujoco/hopper", "generate.env_representation=obs_index")
    assert "reward.form=potential_shaping needs a success flag, and task mujoco/hopper has none" in found
    path = task_file(user_dir, "still", **{"task.make": "my_task_lib:Still", "task.fields": [], "task.source.show": [],
                                            "task.score.kind": "survival"})
    env = env_config(str(path))
    from bird.config.validate import validate

    cfg = compose(["method=rda", "judge.mode=state_text"])
    cfg = replace(cfg, env=replace(env, id="gym/still"), generate=replace(cfg.generate, env_representation="obs_index"))
    assert not [p for p in validate(cfg) if "frames" in p]
    vlm = replace(cfg, feedback=replace(cfg.feedback, format="judge"), judge=replace(cfg.judge, mode="vlm"))
    assert any("judge.mode=vlm needs rendered frames, which suite 'gym' does not render for gym/still" in p
               for p in validate(vlm))


def test_a_task_file_is_typed_an_unknown_key_or_a_wrong_type_is_refused(tmp_path):
    (tmp_path / "env" / "gym").mkdir(parents=True)
    task_file(tmp_path / "env" / "gym", "typo", **{"task.colour": "red"})
    with pytest.raises(Exception, match=r"Key 'colour' not in 'TaskFileConfig'\s+full_key: env.task.colour"):
        compose([f"hydra.searchpath=[file://{tmp_path}]", "env=gym/typo"])
    with pytest.raises(ValueError, match="Key 'colour' not in 'TaskFileConfig'"):  # the checker reads it the same way
        env_config(str(tmp_path / "env" / "gym" / "typo.yaml"))
    with pytest.raises(Exception, match="Error merging override env.task.score.random=abc") as err:
        compose(["env=gym/pendulum", "env.task.score.random=abc"])
    assert "'abc' of type 'str' could not be converted to Float" in str(err.value.__cause__)
    assert "env.task.fields[0] (cos_theta).kind='angle_cosine': allowed:" in _refused(
        "env=gym/pendulum", "env.task.fields.0.kind=angle_cosine")
    assert "env.task: a task file, and suite 'mujoco' reads none" in _refused(
        "env=gym/pendulum", "env.id=mujoco/hopper")


def test_every_gym_task_file_in_conf_is_typed_and_named_by_its_id():
    for path in sorted((CONF_DIR / "env" / "gym").glob("*.yaml")):
        env = env_config(str(path))
        assert env.id == f"gym/{path.stem}" and env.task is not None, path
    example = env_config(str(ROOT / "examples" / "extending" / "pendulum.yaml"))
    assert example.task == env_config("gym/pendulum").task  # the worked example is the shipped task, renamed


# -- the offline (no-LLM) baseline on a task file ------------------------------------------------------------------
def test_the_offline_baseline_builds_pendulum_terms_from_the_declared_field_kinds(tmp_path):
    """Pendulum's fields are a cosine, a sine and an angular velocity: every proposal makes the cosine 1 (upright) and
    the angular velocity small, and runs in the sandbox on the task's observations."""
    import random

    from bird.llm.offline.proposals import propose
    from bird.llm.offline.terms import render_program
    from bird.prompts import obs_fields_context
    from bird.reward.sandbox import SandboxedReward

    spec = make_adapter(env_config("gym/pendulum")).spec
    ctx = {"obs_fields": obs_fields_context(spec), "task": spec.description}
    proposals = [propose(ctx, random.Random(seed)) for seed in range(8)]
    for terms in proposals:
        kinds = {(t.kind, t.fields) for t in terms}
        assert ("upright_cos", ("cos_theta",)) in kinds and ("smooth", ("theta_dot",)) in kinds, kinds
    assert any(t.kind == "control" for terms in proposals for t in terms)  # an action cost, in some
    upright = np.array([[1.0, 0.0, 0.0], [-1.0, 0.0, 0.0]])  # the top, at rest; the bottom, at rest
    with SandboxedReward(render_program(proposals[0], "test"), spec.obs_index, 30.0, 2048) as program:
        reward, comps = program(upright, np.zeros((2, 1)), upright)
    assert comps["upright"][0] > comps["upright"][1] and reward[0] > reward[1]


def test_the_jax_learner_is_refused_on_a_task_whose_env_is_not_jax():
    assert "train.learner=jax_ppo needs an env that runs in JAX (Brax), and task gym/pendulum has none; suites whose " \
           "tasks have one: ['brax']" in _refused("env=gym/pendulum", "train.learner=jax_ppo")


def test_a_run_on_a_users_task_file_is_audited_with_the_files_hidden_names(tmp_path):
    """python -m bird.leaks reads the hidden facts of a task file from the run's config.yaml, so a task that lives
    only on a user's search path (here gym/elsewhere, not in conf/) is audited as bird's own are."""
    import json as _json

    from omegaconf import OmegaConf

    from bird.leaks import audit_run

    cfg = compose(["env=gym/pendulum", "env.id=gym/elsewhere"])
    (tmp_path / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.structured(cfg)))
    (tmp_path / "task.json").write_text(_json.dumps({"env_id": "gym/elsewhere"}))
    cand = tmp_path / "candidates" / "it0-c0"
    cand.mkdir(parents=True)
    prompt = [{"role": "user", "content": "Write a reward for the pendulum."}]
    (cand / "prompt.json").write_text(_json.dumps(prompt))
    assert audit_run(tmp_path) == []
    prompt[0]["content"] += " Hint: costs come from angle_normalize."
    (cand / "prompt.json").write_text(_json.dumps(prompt))
    assert audit_run(tmp_path) == ["it0-c0/prompt.json[0]: names angle_normalize", "it0-c0/prompt.json[0]: names costs"]


def test_each_score_kind_computes_its_quantity_on_a_hand_made_episode():
    """Three steps: x (info) 0 -> 1 -> 3 -> 2, height (field z) 1, 2, 1, 0, rewards 1, 2, 4, info flag on step 2."""
    from bird.config.schema import TaskScoreConfig
    from bird.envs.gym.episode import Episode, episode_quantity

    obs = np.array([[1.0, 3.0, 4.0], [2.0, 0.0, 0.0], [1.0, 0.0, 1.0], [0.0, 0.6, 0.8]])
    infos = [{"x": 0.0}, {"x": 1.0, "ok": 0}, {"x": 3.0, "ok": 1}, {"x": 2.0, "ok": 0}]
    ep = Episode(obs, np.zeros((3, 1)), np.array([1.0, 2.0, 4.0]), infos, False, 0.1,
                 {"z": (0, 1), "delta": (1, 3)})

    def q(kind: str, **kw) -> float:
        return episode_quantity(TaskScoreConfig(kind=kind, definition="", **kw), ep)

    assert q("return") == 7.0 and q("survival") == 3.0
    assert q("displacement", info_key="x") == 2.0 and q("displacement", field="z") == -1.0
    assert q("displacement", info_key="x", negate=True) == -2.0  # backward is better
    assert q("final_distance", field="delta") == pytest.approx(-1.0)  # |(0.6, 0.8)|
    assert q("info", info_key="ok", reduce="any") == 1.0 and q("info", info_key="ok", reduce="sum") == 1.0
    assert q("info", info_key="x", reduce="max") == 3.0 and q("info", info_key="x", reduce="last") == 2.0


def test_tools_that_name_no_task_compose_a_method_on_a_task_it_runs_on():
    """RE-GoT's abstraction is a Meta-World view, refused on the default MuJoCo task: bird.diff, bird.fidelity and
    bird.ablate compose it on the first task that serves it instead."""
    from bird.config.task_for import task_for
    from bird.diff import method_diff

    assert task_for(["regot"], []) == ["env=metaworld/assembly"]  # the first (sorted) task that serves it
    assert task_for(["eureka"], []) == [] and task_for(["regot"], ["env=metaworld/push"]) == ["env=metaworld/push"]
    assert method_diff("eureka", "regot")["generate.env_representation"] == ("full_source", "abstraction")


def test_a_task_files_content_is_part_of_the_config_hash():
    """A sweep re-run skips a completed search only when its task is the same: a task file's keys are hashed (a config
    with no task file hashes as before the key existed: env.task null is left out)."""
    from bird.config.load import config_hash

    base = compose(["env=gym/pendulum"])
    assert config_hash(base) != config_hash(compose(["env=gym/pendulum", "env.task.score.random=-1000"]))
    assert config_hash(base) != config_hash(compose(["env=gym/pendulum", "env.task.hidden.names=[costs]"]))


def test_an_overridden_description_warns_that_the_score_is_still_the_tasks_own():
    """Asking Hopper to hop backward through env.description still ranks forward motion: the command line says so."""
    from bird.config.validate_task import description_warning

    warning = description_warning(["method=eureka", "env=mujoco/hopper", "env.description=Hop backward."],
                                  "mujoco/hopper")
    assert warning and "mujoco/hopper's score" in warning and "task file" in warning
    assert description_warning(["++env.description=x"], "gym/pendulum")
    assert description_warning(["env=mujoco/hopper", "env.horizon=100", "generate.description_view=x"],
                               "mujoco/hopper") is None
