"""Gym MuJoCo v5 suite: observation index against the simulator, horizon, scores, random baselines."""

import json

import numpy as np
import pytest

from bird.config.schema import EnvConfig
from bird.envs.mujoco.adapter import BASELINES_PATH, MissingAnchorError
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
        if "free joint" in f.description:  # Ant's and Humanoid's root: x, y, z slides, then the orientation
            joint = f.description.split("free joint ")[1].split()[0]
            pos, dof = model.joint(joint).qposadr[0], model.joint(joint).dofadr[0]
            slot = "xyz".index(f.axis) if f.size == 1 else 3
            expected = data.qpos[pos + slot: pos + slot + f.size] if f.kind in ("position", "quaternion") else \
                data.qvel[dof + slot: dof + slot + f.size]
            np.testing.assert_allclose(np.atleast_1d(value), expected, err_msg=f.name)
        elif f.kind in ("position", "angle"):
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


def _random_scores(task: str, episodes: int, seed: int) -> np.ndarray:
    """The env's own benchmark score of fresh uniform-random episodes (seeds the stored anchor never used)."""
    env = _adapter(task).make_env(seed=seed)
    scores = []
    for s in range(seed, seed + episodes):
        env.reset(seed=s)
        env.action_space.seed(s)
        while True:
            _, _, term, trunc, info = env.step(env.action_space.sample())
            if term or trunc:
                scores.append(info["bird_episode"]["score"])
                break
    env.close()
    return np.asarray(scores)


def _near_zero(scores: np.ndarray) -> bool:
    """Mean score within 3 standard errors of 0."""
    return abs(scores.mean()) <= 3 * scores.std(ddof=1) / np.sqrt(len(scores))


# tasks whose random anchor lies far from 0 (>= 6 standard errors of a 20-episode mean), so a missing anchor shows
ANCHORED = {"inverted_pendulum": 20, "reacher": 20, "half_cheetah": 30}


@pytest.mark.parametrize("task", sorted(ANCHORED))
def test_random_policy_scores_zero_on_average(task):
    assert _near_zero(_random_scores(task, ANCHORED[task], seed=500))


@pytest.mark.parametrize("task", sorted(ANCHORED))
def test_random_policy_is_off_zero_when_the_anchor_is_zero(task, monkeypatch):
    """Positive control: scores measured from 0 instead of from the random policy (an anchor of 0, the old silent
    fallback of a missing one) are far from 0, and the check above must fail."""
    import bird.envs.mujoco.adapter as adapter_module

    stored = adapter_module.load_random_baselines()
    monkeypatch.setattr(adapter_module, "load_random_baselines",
                        lambda: {**stored, task: {**stored[task], "quantity_mean": 0.0}})
    assert not _near_zero(_random_scores(task, ANCHORED[task], seed=500))


def test_a_missing_anchor_is_an_error_naming_the_task_and_the_command(monkeypatch):
    import bird.envs.mujoco.adapter as adapter_module

    stored = adapter_module.load_random_baselines()
    monkeypatch.setattr(adapter_module, "load_random_baselines",
                        lambda: {k: v for k, v in stored.items() if k != "reacher"})
    with pytest.raises(MissingAnchorError, match=r"'reacher'.*python -m bird\.envs\.mujoco\.baselines --tasks reacher"):
        _adapter("reacher").make_env()
    _adapter("hopper").make_env().close()  # the other tasks are unaffected


def test_the_anchor_is_measured_on_raw_quantities_without_an_anchor(monkeypatch):
    """`python -m bird.envs.mujoco.baselines` measures a task that has no anchor yet: the raw episode quantity."""
    import bird.envs.mujoco.adapter as adapter_module
    from bird.envs.mujoco.baselines import measure_random_quantity

    monkeypatch.setattr(adapter_module, "load_random_baselines", lambda: {})
    got = measure_random_quantity("reacher", episodes=2, seed=7, horizon=50)
    adapter = make_adapter(EnvConfig(id="mujoco/reacher", description="test", horizon=50))
    env = adapter.make_unanchored_env(seed=7)
    quantities = []
    for s in (7, 8):
        env.reset(seed=s)
        env.action_space.seed(s)
        while True:
            *_, term, trunc, info = env.step(env.action_space.sample())
            if term or trunc:
                assert info["bird_episode"]["score"] == info["bird_episode"]["quantity"] < 0  # -final distance
                quantities.append(info["bird_episode"]["quantity"])
                break
    assert got["seeds"] == [7, 8] and got["quantity_mean"] == pytest.approx(np.mean(quantities), rel=1e-12)


def _own_quantity(task: str, env) -> float:
    """The episode quantity read from the simulator, by the score definition's words (tasks.py)."""
    data = env.unwrapped.data
    if TASKS[task].score == "displacement":
        return float(data.qpos[0])
    if TASKS[task].score == "final_distance":
        return -float(np.linalg.norm(data.body("fingertip").xpos[:2] - data.body("target").xpos[:2]))
    raise AssertionError(task)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_episode_score_follows_the_score_definition(task):
    """score = (quantity - stored random mean) / scale, with quantity and scale worked out here from the
    simulator and the definitions: displacement in m/s over the horizon, survival as a share of the steps above
    random, final distance relative to random's."""
    horizon = 1000
    anchor = json.loads(BASELINES_PATH.read_text())[task]["quantity_mean"]
    env = _adapter(task).make_env(seed=3)
    env.reset(seed=3)
    env.action_space.seed(3)
    start = _own_quantity(task, env) if TASKS[task].score == "displacement" else 0.0
    steps = 0
    while True:
        _, _, term, trunc, info = env.step(env.action_space.sample())
        steps += 1
        if term or trunc:
            break
    kind = TASKS[task].score
    if kind == "displacement":
        quantity, scale = _own_quantity(task, env) - start, horizon * env.unwrapped.dt
    elif kind == "survival":
        quantity, scale = float(steps), horizon - anchor
    else:
        quantity, scale = _own_quantity(task, env), abs(anchor)
    env.close()
    assert info["bird_episode"]["quantity"] == pytest.approx(quantity, abs=1e-9)
    assert info["bird_episode"]["score"] == pytest.approx((quantity - anchor) / scale, rel=1e-9, abs=1e-12)
    assert anchor != 0.0 and scale > 0


def test_prompt_code_never_shows_the_reference_reward():
    for task in TASKS:
        spec = _adapter(task).spec
        text = spec.env_code + json.dumps(spec.to_json())
        for leak in ("_get_rew", "healthy_reward", "ctrl_cost", "forward_reward", "reward_dist", "reward"):
            assert leak not in text.replace("bird", ""), (task, leak)
