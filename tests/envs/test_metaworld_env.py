"""Meta-World MT10 v3: every task steps, the observation index matches the simulator, names and horizons."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from bird.config.schema import EnvConfig
from bird.envs.metaworld.tasks import TASKS
from bird.envs.registry import make_adapter

# Where each task's first object lives in the simulator, written out here independently of the adapter.
_OBJECT_POS = {
    "button_press_topdown": lambda d: d.body("button").xpos + [0.0, 0.0, 0.193],
    "door_open": lambda d: d.geom("handle").xpos,
    "drawer_close": lambda d: d.body("drawer_link").xpos + [0.0, -0.16, 0.05],
    "drawer_open": lambda d: d.body("drawer_link").xpos + [0.0, -0.16, 0.0],
    "peg_insert_side": lambda d: d.site("pegGrasp").xpos,
    "pick_place": lambda d: d.body("obj").xpos,
    "push": lambda d: d.body("obj").xpos,
    "reach": lambda d: d.body("obj").xpos,
    "window_close": lambda d: d.site("handleCloseStart").xpos,
    "window_open": lambda d: d.site("handleOpenStart").xpos,
}
# Orientation source: ("xmat", geom/site, name) read as (x, y, z, w); ("xquat", body) as (w, x, y, z); None = zeros.
_OBJECT_QUAT = {
    "button_press_topdown": ("xquat", "button"),
    "door_open": ("xmat", "geom", "handle"),
    "drawer_close": None,
    "drawer_open": ("xquat", "drawer_link"),
    "peg_insert_side": ("xmat", "site", "pegGrasp"),
    "pick_place": ("xmat", "geom", "objGeom"),
    "push": ("xmat", "geom", "objGeom"),
    "reach": ("xmat", "geom", "objGeom"),
    "window_close": None,
    "window_open": None,
}


def _adapter(task: str, horizon: int = 500):
    return make_adapter(EnvConfig(id=f"metaworld/{task}", description="test", horizon=horizon))


def _expected_quat(data, src) -> np.ndarray:
    if src is None:
        return np.zeros(4)
    if src[0] == "xquat":
        return data.body(src[1]).xquat.copy()
    xmat = (data.geom(src[2]) if src[1] == "geom" else data.site(src[2])).xmat
    wxyz = np.zeros(4)
    mujoco.mju_mat2Quat(wxyz, xmat)
    return np.r_[wxyz[1:], wxyz[0]]


def _check_frame(task: str, env, fields: dict[str, np.ndarray], obj: str) -> None:
    data = env.unwrapped.data
    np.testing.assert_allclose(fields["hand_pos"], data.body("hand").xpos, atol=1e-9)
    fingers = np.linalg.norm(data.body("rightclaw").xpos - data.body("leftclaw").xpos)
    np.testing.assert_allclose(fields["gripper_open"], np.clip(fingers / 0.1, 0, 1), atol=1e-9)
    np.testing.assert_allclose(fields[f"{obj}_pos"], _OBJECT_POS[task](data), atol=1e-9)
    quat, expected = fields[f"{obj}_quat"], _expected_quat(data, _OBJECT_QUAT[task])
    assert np.allclose(quat, expected, atol=1e-6) or np.allclose(quat, -expected, atol=1e-6)
    unwrapped = env.unwrapped
    goal = np.clip(unwrapped._target_pos, unwrapped.goal_space.low, unwrapped.goal_space.high)
    np.testing.assert_allclose(fields["goal_pos"], goal, atol=1e-9)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_every_task_steps_and_its_obs_index_matches_the_simulator(task):
    adapter = _adapter(task)
    index, obj = adapter.spec.obs_index, TASKS[task].obj
    env = adapter.make_env(seed=0)
    policy = adapter.expert_policy()
    obs, _ = env.reset(seed=1)
    assert obs.shape == (index.dim,) == (39,)
    prev_current = obs[:18]
    for _ in range(40):
        obs, reward, terminated, truncated, info = env.step(policy(obs))
        fields = {k: v[0] for k, v in index.split(obs[None]).items()}
        _check_frame(task, env, fields, obj)
        np.testing.assert_allclose(obs[18:36], prev_current)  # previous frame = last step's current frame
        prev_current = obs[:18]
        for f in index.fields:
            if f.always_zero:
                assert not np.any(fields[f.name]), f.name
        assert np.isfinite(reward) and not terminated and not truncated and "success" in info
    env.close()


@pytest.mark.parametrize("task", sorted(TASKS))
def test_obs_index_names_task_objects_and_marks_padding(task):
    index = _adapter(task).spec.obs_index
    names = index.names()
    obj = TASKS[task].obj
    assert {"hand_pos", "gripper_open", f"{obj}_pos", f"prev_{obj}_pos", "goal_pos"} <= set(names)
    zero = {f.name for f in index.fields if f.always_zero}
    assert {"second_object_pos", "second_object_quat", "prev_second_object_pos"} <= zero
    assert (f"{obj}_quat" in zero) == (_OBJECT_QUAT[task] is None)
    assert [f.kind for f in index.fields if f.name == "goal_pos"] == ["goal"]


def test_reset_seed_is_reproducible_and_goal_positions_are_resampled_each_reset():
    env = _adapter("push").make_env()
    first = env.reset(seed=5)[0]
    np.testing.assert_array_equal(env.reset(seed=5)[0], first)
    goals = {tuple(np.round(env.reset()[0][36:], 6)) for _ in range(8)}
    assert len(goals) > 1
    env.close()


@pytest.mark.parametrize("task, seed", [("push", 0), ("drawer_open", 3)])
def test_envs_made_from_the_shared_benchmark_equal_metaworlds_own_mt1(task, seed):
    """adapter._make_mt1 makes MT1's 50 goal variants once per task and seed; its envs must be Meta-World's own: the
    same wrappers, the same goals drawn at each reset, the same steps, rewards, flags and infos."""
    import gymnasium as gym
    import metaworld  # noqa: F401  (registers Meta-World/MT1)

    from bird.envs.metaworld import adapter as mw

    name = TASKS[task].mw_name
    hits = mw._mt1_benchmark.cache_info().hits
    ours = [mw.SeededReset(mw._make_mt1(name, seed, 60)) for _ in range(2)]
    assert mw._mt1_benchmark.cache_info().hits >= hits + 1  # the second env reused the first one's benchmark
    theirs = mw.SeededReset(gym.make("Meta-World/MT1", env_name=name, seed=seed, max_episode_steps=60,
                                     disable_env_checker=True))
    assert str(ours[0]).replace(mw.MT1_ID, "Meta-World/MT1") == str(theirs)
    actions = np.random.default_rng(7).uniform(-1, 1, (70, 4)).astype(np.float32)
    for env in ours:
        for reset_seed in (0, 11):
            a, b = env.reset(seed=reset_seed), theirs.reset(seed=reset_seed)
            np.testing.assert_array_equal(a[0], b[0])  # the goal variant and the hand's start
            for action in actions:
                mine, meta = env.step(action), theirs.step(action)
                for x, y in zip(mine[:4], meta[:4], strict=True):
                    np.testing.assert_array_equal(x, y)
                assert mine[4].keys() == meta[4].keys()
                for key in mine[4]:
                    np.testing.assert_array_equal(mine[4][key], meta[4][key], err_msg=key)
                if mine[2] or mine[3]:
                    break
            assert mine[3]  # the 60-step horizon truncated both
    for env in (*ours, theirs):
        env.close()


def test_horizon_truncates_and_the_episode_reports_the_success_score():
    adapter = _adapter("reach", horizon=120)
    env = adapter.make_env(seed=0)
    policy = adapter.expert_policy()
    obs, _ = env.reset(seed=0)
    steps, terminated, truncated = 0, False, False
    while not (terminated or truncated):
        obs, _, terminated, truncated, info = env.step(policy(obs))
        steps += 1
    assert steps == 120 and truncated
    assert info["bird_episode"] == {"quantity": 1.0, "score": 1.0}
    env.close()


def test_program_info_hides_success_and_reward_terms():
    adapter = _adapter("push")
    env = adapter.make_env(seed=0)
    env.reset(seed=0)
    info = env.step(env.action_space.sample())[-1]
    assert "success" in info and adapter.info_for_program(info) == {}
    env.close()


@pytest.mark.parametrize("name", ["pick-place", "pick-place-v3", "pick_place"])
def test_hyphenated_and_versioned_names_resolve_to_the_canonical_task(name):
    adapter = make_adapter(EnvConfig(id=f"metaworld/{name}", description="x", horizon=500))
    assert adapter.task == "pick_place"


def test_unknown_task_fails_fast_listing_valid_names():
    with pytest.raises(ValueError, match=r"unknown metaworld task 'nosuch'.*button_press_topdown.*window_open"):
        make_adapter(EnvConfig(id="metaworld/nosuch", description="x", horizon=500))


def test_horizon_above_metaworld_limit_is_rejected():
    with pytest.raises(ValueError, match="horizon must be in"):
        _adapter("reach", horizon=501)
