"""Gym MuJoCo v5 suite: observation index against the simulator, horizon, scores, random baselines."""

import json

import numpy as np
import pytest

from bird.config.schema import EnvConfig
from bird.envs.mujoco.adapter import BASELINES_PATH
from bird.envs.mujoco.tasks import TASKS
from bird.envs.registry import make_adapter


def _adapter(task: str):
    return make_adapter(EnvConfig(id=f"mujoco/{task}", description="test", horizon=1000))


@pytest.mark.parametrize("task", sorted(TASKS))
def test_obs_index_matches_the_simulator_state(task):
    adapter = _adapter(task)
    env = adapter.make_env()
    obs, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(5):
        obs, *_ = env.step(rng.uniform(env.action_space.low, env.action_space.high))
    data, model = env.unwrapped.data, env.unwrapped.model
    fields = adapter.spec.obs_index.split(obs[None])
    assert adapter.spec.obs_index.dim == obs.shape[0]
    for f in adapter.spec.obs_index.fields:
        value = fields[f.name][0]
        if f.kind in ("position", "angle"):
            joint = f.name.rsplit("_", 1)[0]
            assert np.isclose(value, data.qpos[model.joint(joint).qposadr[0]]), f.name
        elif f.kind in ("velocity", "angular_velocity"):
            joint = f.name.rsplit("_", 1)[0]
            expected = data.qvel[model.joint(joint).dofadr[0]]
            assert np.isclose(value, np.clip(expected, -10, 10) if "clipped" in f.description else expected), f.name
        elif f.kind in ("angle_cos", "angle_sin"):
            op, joint = f.name.split("_", 1)
            angle = data.qpos[model.joint(joint).qposadr[0]]
            assert np.isclose(value, np.cos(angle) if op == "cos" else np.sin(angle)), f.name
        elif f.kind == "position_delta":
            a, b = f.name.split("_minus_")
            np.testing.assert_allclose(value, (data.body(a).xpos - data.body(b).xpos)[: f.size], atol=1e-9)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_horizon_is_1000_and_each_episode_reports_a_score(task):
    env = _adapter(task).make_env()
    env.reset(seed=0)
    steps, info = 0, {}
    while True:
        _, _, term, trunc, info = env.step(np.zeros(env.action_space.shape))
        steps += 1
        if term or trunc:
            break
    assert steps <= 1000 and (term or steps == 1000)
    assert set(info["bird_episode"]) == {"quantity", "score"}


def test_random_baselines_are_stored_with_seeds_for_every_task():
    stored = json.loads(BASELINES_PATH.read_text())
    assert set(stored) == set(TASKS)
    for task, entry in stored.items():
        assert len(entry["seeds"]) == entry["episodes"] >= 10, task
        assert np.isfinite(entry["quantity_mean"])


def test_random_policy_scores_near_zero():
    from bird.envs.mujoco.baselines import measure_random_quantity

    adapter = _adapter("inverted_pendulum")
    random_q, scale = adapter.score_normalisation()
    fresh = measure_random_quantity("inverted_pendulum", episodes=30, seed=500)
    score = (fresh["quantity_mean"] - random_q) / scale
    assert abs(score) < 0.01  # 1% of the horizon: fresh seeds, same policy


def test_prompt_code_never_shows_the_reference_reward():
    for task in TASKS:
        spec = _adapter(task).spec
        text = spec.env_code + json.dumps(spec.to_json())
        for leak in ("_get_rew", "healthy_reward", "ctrl_cost", "forward_reward", "reward_dist", "reward"):
            assert leak not in text.replace("bird", ""), (task, leak)
