"""Meta-World v3 (all 50 tasks): every task steps, the observation index matches the simulator, names and horizons."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from bird.config.schema import EnvConfig
from bird.envs.metaworld.tasks import MT10, TASKS
from bird.envs.registry import make_adapter


# Where each task's objects live in the simulator and how their orientation is read, written out here independently of
# the adapter (from Meta-World's `_get_pos_objects` / `_get_quat_objects`): (position of each object, orientation of
# each). Orientation: ("xmat", "geom" | "site" | "body", name) read as (x, y, z, w); ("xquat", body) as (w, x, y, z);
# ("const", (w, x, y, z)); None = zeros.
def _body(name, offset=(0.0, 0.0, 0.0)):
    return lambda d: d.body(name).xpos + offset  # get_body_com: the body frame's position


def _site(name, offset=(0.0, 0.0, 0.0)):
    return lambda d: d.site(name).xpos + offset


def _geom(name):
    return lambda d: d.geom(name).xpos


def _dial(d):
    angle = d.joint("knob_Joint_1").qpos.item()
    return d.body("dial").xpos + 0.05 * np.array([np.sin(angle), -np.cos(angle), 0.0])


_TOP, _FRONT = (0.0, 0.0, 0.193), (0.0, -0.193, 0.0)
_OBJ_XMAT = ("xmat", "geom", "objGeom")
_OBJECTS = {
    "assembly": [(_site("RoundNut-8"), ("xquat", "RoundNut"))],
    "basketball": [(_body("bsktball"), ("xquat", "bsktball"))],
    "bin_picking": [(_body("obj"), ("xquat", "obj"))],
    "box_close": [(_body("top_link"), ("xquat", "top_link"))],
    "button_press_topdown": [(_body("button", _TOP), ("xquat", "button"))],
    "button_press_topdown_wall": [(_body("button", _TOP), ("xquat", "button"))],
    "button_press": [(_body("button", _FRONT), ("xquat", "button"))],
    "button_press_wall": [(_body("button", _FRONT), ("xquat", "button"))],
    "coffee_button": [(_site("buttonStart"), ("const", (1.0, 0.0, 0.0, 0.0)))],
    "coffee_pull": [(_body("obj"), ("xmat", "geom", "mug"))],
    "coffee_push": [(_body("obj"), ("xmat", "geom", "mug"))],
    "dial_turn": [(_dial, ("xquat", "dial"))],
    "disassemble": [(_site("RoundNut-8"), ("xquat", "RoundNut"))],
    "door_close": [(_geom("handle"), ("xmat", "geom", "handle"))],
    "door_lock": [(_site("lockStartLock"), ("xquat", "door_link"))],
    "door_open": [(_geom("handle"), ("xmat", "geom", "handle"))],
    "door_unlock": [(_site("lockStartUnlock"), ("xquat", "door_link"))],
    "drawer_close": [(_body("drawer_link", (0.0, -0.16, 0.05)), None)],
    "drawer_open": [(_body("drawer_link", (0.0, -0.16, 0.0)), ("xquat", "drawer_link"))],
    "faucet_close": [(_site("handleStartClose", (0.0, 0.0, -0.01)), ("xquat", "faucetBase"))],
    "faucet_open": [(_site("handleStartOpen", (0.0, 0.0, -0.01)), ("xquat", "faucetBase"))],
    "hammer": [(_body("hammer"), ("xquat", "hammer")), (_body("nail_link"), ("xquat", "nail_link"))],
    "hand_insert": [(_body("obj"), ("xquat", "obj"))],
    "handle_press_side": [(_site("handleStart"), None)],
    "handle_press": [(_site("handleStart"), None)],
    "handle_pull_side": [(_site("handleCenter"), None)],
    "handle_pull": [(_site("handleRight"), None)],
    "lever_pull": [(_site("leverStart"), _OBJ_XMAT)],
    "peg_insert_side": [(_site("pegGrasp"), ("xmat", "site", "pegGrasp"))],
    "peg_unplug_side": [(_site("pegEnd"), ("xquat", "plug1"))],
    "pick_out_of_hole": [(_body("obj"), ("xquat", "obj"))],
    "pick_place": [(_body("obj"), _OBJ_XMAT)],
    "pick_place_wall": [(_geom("objGeom"), _OBJ_XMAT)],
    "plate_slide_back_side": [(_geom("puck"), ("xmat", "geom", "puck"))],
    "plate_slide_back": [(_geom("puck"), ("xmat", "geom", "puck"))],
    "plate_slide_side": [(_geom("puck"), ("xmat", "geom", "puck"))],
    "plate_slide": [(_geom("puck"), ("xmat", "geom", "puck"))],
    "push_back": [(_geom("objGeom"), _OBJ_XMAT)],
    "push": [(_body("obj"), _OBJ_XMAT)],
    "push_wall": [(_geom("objGeom"), _OBJ_XMAT)],
    "reach": [(_body("obj"), _OBJ_XMAT)],
    "reach_wall": [(_body("obj"), _OBJ_XMAT)],
    "shelf_place": [(_body("obj"), _OBJ_XMAT)],
    "soccer": [(_body("soccer_ball"), ("xmat", "body", "soccer_ball"))],
    "stick_pull": [(_body("stick"), ("xmat", "body", "stick")), (_site("insertion"), None)],
    "stick_push": [(_body("stick"), ("xmat", "body", "stick")), (_site("insertion", (0.0, 0.09, 0.0)), None)],
    "sweep_into": [(_body("obj"), _OBJ_XMAT)],
    "sweep": [(lambda d: d.body("obj").xpos, ("xquat", "obj"))],
    "window_close": [(_site("handleCloseStart"), None)],
    "window_open": [(_site("handleOpenStart"), None)],
}
# steps checked per task: MT10 as since the suite had ten tasks, the other forty fewer (each step checks every field)
_STEPS = {task: 40 if task in MT10 else 12 for task in TASKS}


def _adapter(task: str, horizon: int = 500):
    return make_adapter(EnvConfig(id=f"metaworld/{task}", description="test", horizon=horizon))


def _expected_quat(data, src) -> np.ndarray:
    if src is None:
        return np.zeros(4)
    if src[0] == "xquat":
        return data.body(src[1]).xquat.copy()
    if src[0] == "const":
        return np.asarray(src[1])
    xmat = {"geom": data.geom, "site": data.site, "body": data.body}[src[1]](src[2]).xmat
    wxyz = np.zeros(4)
    mujoco.mju_mat2Quat(wxyz, xmat)
    return np.r_[wxyz[1:], wxyz[0]]


def _object_names(task: str) -> list[str]:
    return [n for n in (TASKS[task].obj, TASKS[task].obj2) if n]


def _check_frame(task: str, env, fields: dict[str, np.ndarray]) -> None:
    data = env.unwrapped.data
    np.testing.assert_allclose(fields["hand_pos"], data.body("hand").xpos, atol=1e-9)
    fingers = np.linalg.norm(data.body("rightclaw").xpos - data.body("leftclaw").xpos)
    np.testing.assert_allclose(fields["gripper_open"], np.clip(fingers / 0.1, 0, 1), atol=1e-9)
    for obj, (pos, src) in zip(_object_names(task), _OBJECTS[task], strict=True):
        np.testing.assert_allclose(fields[f"{obj}_pos"], pos(data), atol=1e-9, err_msg=obj)
        quat, expected = fields[f"{obj}_quat"], _expected_quat(data, src)
        assert np.allclose(quat, expected, atol=1e-6) or np.allclose(quat, -expected, atol=1e-6), obj
    unwrapped = env.unwrapped
    goal = np.clip(unwrapped._target_pos, unwrapped.goal_space.low, unwrapped.goal_space.high)
    np.testing.assert_allclose(fields["goal_pos"], goal, atol=1e-9)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_every_task_steps_and_its_obs_index_matches_the_simulator(task):
    adapter = _adapter(task)
    index = adapter.spec.obs_index
    env = adapter.make_env(seed=0)
    policy = adapter.expert_policy()
    obs, _ = env.reset(seed=1)
    assert obs.shape == (index.dim,) == (39,)
    prev_current = obs[:18]
    for _ in range(_STEPS[task]):
        obs, reward, terminated, truncated, info = env.step(policy(obs))
        fields = {k: v[0] for k, v in index.split(obs[None]).items()}
        _check_frame(task, env, fields)
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
    objs = _object_names(task)
    assert {"hand_pos", "gripper_open", "goal_pos"} | {f"{o}_pos" for o in objs} | {f"prev_{o}_pos" for o in objs} \
        <= set(names)
    zero = {f.name for f in index.fields if f.always_zero}
    if len(objs) == 1:
        assert {"second_object_pos", "second_object_quat", "prev_second_object_pos"} <= zero
    else:
        assert not [n for n in names if "second_object" in n]
    described = {f.name: f.description for f in index.fields}
    for obj, (_, src) in zip(objs, _OBJECTS[task], strict=True):
        assert (f"{obj}_quat" in zero) == (src is None), obj
        if src is not None:  # the order the description states is the one the simulator is read in
            order = "(x, y, z, w)" if src[0] == "xmat" else "(w, x, y, z)"
            assert order in described[f"{obj}_quat"], (obj, described[f"{obj}_quat"])
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
