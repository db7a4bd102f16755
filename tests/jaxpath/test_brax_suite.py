"""The Brax suite: observation index against the brax state, episodes with a score, random-policy anchors."""

import json

import numpy as np
import pytest

from bird.config.schema import EnvConfig
from bird.envs.brax.adapter import BASELINES_PATH, anchor_key
from bird.envs.brax.tasks import TASKS
from bird.envs.registry import make_adapter


def _adapter(task: str, horizon: int = 1000):
    return make_adapter(EnvConfig(id=f"brax/{task}", description="test", horizon=horizon))


def _tip(x):  # brax reacher's fingertip: 0.11 m along body1's x axis
    from brax import math

    return np.asarray(x.pos[1] + math.rotate(np.array([0.11, 0.0, 0.0]), x.rot[1]))


def _expected(f, q, qd, x, model):
    """What a joint-derived field should hold, from q, qd and the body transforms (not from the env's _get_obs)."""
    joints = {model.joint(j).name: model.joint(j) for j in range(model.njnt)}
    if "height of the root body" in f.description:
        return x.pos[0, 2]
    if f.kind in ("angle_cos", "angle_sin"):
        angle = q[joints[f.name.split("_", 1)[1]].qposadr[0]]
        return np.cos(angle) if f.kind == "angle_cos" else np.sin(angle)
    base, suffix = f.name.rsplit("_", 1)
    src, adr = (q, "qposadr") if suffix in ("pos", "angle", "quat") else (qd, "dofadr")
    if base in joints:  # a slide or hinge joint, or a free joint's orientation
        start = int(getattr(joints[base], adr)[0]) + (3 if suffix == "quat" or f.size == 3 else 0)
    else:  # one coordinate of a free joint: <joint>_<axis>
        root, axis = base.rsplit("_", 1)
        start = int(getattr(joints[root], adr)[0]) + "xyz".index(axis)
    value = src[start : start + f.size]
    return np.clip(value, -10, 10) if "clipped" in f.description else value


@pytest.mark.parametrize("task", sorted(TASKS))
def test_obs_index_matches_the_brax_state(task):
    import jax

    adapter = _adapter(task)
    env, model = adapter.env, adapter.env.sys.mj_model
    rng = np.random.default_rng(1)
    q = np.asarray(env.sys.init_q) + rng.uniform(-0.3, 0.3, env.sys.q_size())
    if task == "ant":  # a unit quaternion for the free root
        q[3:7] /= np.linalg.norm(q[3:7])
    qd = rng.uniform(-12, 12, env.sys.qd_size())  # beyond +-10, so clipping is seen
    observe = jax.jit(lambda q, qd: (env._get_obs(s := env.pipeline_init(q, qd)), s.x))
    obs, x = observe(q, qd)
    obs = np.asarray(obs)
    index = adapter.spec.obs_index
    assert index.dim == obs.shape[0] == env.observation_size
    fields = index.split(obs[None])
    for f in index.fields:
        value = np.atleast_1d(fields[f.name][0])
        if f.name == "fingertip_minus_target":
            np.testing.assert_allclose(value, (_tip(x) - np.asarray(x.pos[2]))[: f.size], atol=1e-4)
        elif f.name == "fingertip_vel":  # d/dt of body1's origin (finite difference) + w x (0.11, 0, 0), w = z spin
            _, x2 = observe(q + 1e-3 * qd, qd)
            link_vel = (np.asarray(x2.pos[1]) - np.asarray(x.pos[1])) / 1e-3
            expected = link_vel[:2] + np.array([0.0, 0.11 * (qd[0] + qd[1])])
            np.testing.assert_allclose(value, expected, rtol=0.02, atol=0.02)
        else:
            np.testing.assert_allclose(value, np.atleast_1d(_expected(f, q, qd, x, model)), rtol=1e-4, atol=1e-4,
                                       err_msg=f.name)


def test_every_task_has_a_measured_random_anchor_for_its_default_backend():
    stored = json.loads(BASELINES_PATH.read_text())
    for task, defn in TASKS.items():
        entry = stored[anchor_key(task, defn.default_backend)]
        assert entry["episodes"] == len(entry["seeds"]) >= 100 and np.isfinite(entry["quantity_mean"]), task
        assert entry["command"].startswith("python -m bird.envs.brax.baselines")


def test_an_unmeasured_backend_fails_with_the_command_that_measures_it():
    adapter = make_adapter(EnvConfig(id="brax/hopper", description="t", backend="spring"))
    stored = json.loads(BASELINES_PATH.read_text())
    if anchor_key("hopper", "spring") in stored:
        pytest.skip("an anchor for spring was measured")
    with pytest.raises(ValueError, match="python -m bird.envs.brax.baselines --tasks hopper --backend spring"):
        adapter.score_normalisation()


def test_swimmer_accepts_only_the_backend_brax_supports():
    with pytest.raises(ValueError, match="generalized"):
        make_adapter(EnvConfig(id="brax/swimmer", description="t", backend="positional"))


def test_gym_view_ends_episodes_at_the_horizon_with_a_score():
    env = _adapter("inverted_pendulum", horizon=40).make_env()
    env.reset(seed=0)
    steps, info = 0, {}
    while True:
        _, _, term, trunc, info = env.step(np.zeros(env.action_space.shape))
        steps += 1
        if term or trunc:
            break
    assert (term or steps == 40) and set(info["bird_episode"]) == {"quantity", "score"}
    assert info["bird_episode"]["quantity"] == steps  # survival: steps balanced


def test_random_policy_scores_near_zero():
    from bird.envs.brax.baselines import measure_random_quantity

    adapter = _adapter("inverted_pendulum")
    random_q, scale = adapter.score_normalisation()
    fresh = measure_random_quantity("inverted_pendulum", adapter.backend, episodes=30, seed=500)
    assert abs((fresh["quantity_mean"] - random_q) / scale) < 0.01  # 1% of the horizon: fresh seeds, same policy


def test_prompt_code_shows_the_observation_not_the_reward():
    for task in TASKS:
        code = _adapter(task).spec.env_code
        assert "_get_obs" in code and "reward" not in code.lower(), task
