"""BIRD's Gym tasks as task files and suite entries (docs/bird_gym_tasks.md): their metrics on hand-made episodes,
the tasks without a reference reward refused what needs one, a discrete action through the gym suite and
policy.npz, the PPO expert that supplies demonstrations where a task has no scripted one (a cheap one: 2,048 steps,
trained once per session into the session's cache), and the catalogue docs/tasks.md is generated from."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from bird.config.load import ConfigError, compose
from bird.envs.demos import env_config
from bird.envs.gym.episode import Episode
from bird.envs.registry import make_adapter

ROOT = Path(__file__).resolve().parents[2]
CHEAP_EXPERT_STEPS = 2048  # a smoke-size PPO expert: the plumbing, not an expert


def _episode(x=None, y=None, fields=None, dt=0.05, steps=None):
    """An episode of `steps` steps whose info carries x_position/y_position and whose obs holds `fields`."""
    n = steps if steps is not None else len(x) - 1
    infos = [{k: v[i] for k, v in (("x_position", x), ("y_position", y)) if v is not None} for i in range(n + 1)]
    obs = np.asarray(fields if fields is not None else np.zeros((n + 1, 1)), dtype=float)
    names = {"fingertip_minus_target": (0, 2)} if fields is not None else {}
    return Episode(obs, np.zeros((n, 1)), np.full(n, math.nan), infos, False, dt, names)


# -- metrics, on episodes whose answer is worked out by hand ----------------------------------------------------------
def test_target_speed_error_is_zero_at_2_m_s_and_the_speed_gap_otherwise():
    from bird.envs.gym.metrics import target_speed_error

    # 10 steps of 0.05 s = 0.5 s; 1 m in 0.5 s is exactly 2 m/s; 0.5 m is 1 m/s; 2 m is 4 m/s
    assert target_speed_error(_episode(x=np.linspace(3.0, 4.0, 11))) == pytest.approx(0.0)
    assert target_speed_error(_episode(x=np.linspace(3.0, 3.5, 11))) == pytest.approx(-1.0)
    assert target_speed_error(_episode(x=np.linspace(3.0, 5.0, 11))) == pytest.approx(-2.0)


def test_heading_speed_credits_only_progress_along_the_diagonal():
    from bird.envs.gym.metrics import heading_speed

    along = _episode(x=np.linspace(0, 1, 11), y=np.linspace(0, 1, 11))  # sqrt(2) m along it in 0.5 s
    assert heading_speed(along) == pytest.approx(math.sqrt(2) / 0.5)
    plus_x = _episode(x=np.linspace(0, 1, 11), y=np.zeros(11))  # +x: cos(45°) of its speed
    assert heading_speed(plus_x) == pytest.approx(math.sqrt(0.5) / 0.5)
    across = _episode(x=np.linspace(0, 1, 11), y=np.linspace(0, -1, 11))
    assert heading_speed(across) == pytest.approx(0.0, abs=1e-12)


def test_dwell_fraction_counts_arriving_states_within_5_cm():
    from bird.envs.gym.metrics import dwell_fraction

    # the reset state (on target) is not counted; of 4 steps, 0.04 m and 0.05 m count, 0.06 m and 0.3 m do not
    offsets = np.array([[0.0, 0.0], [0.04, 0.0], [0.0, 0.06], [0.03, 0.04], [0.3, 0.0]])
    assert dwell_fraction(_episode(fields=offsets, steps=4)) == pytest.approx(0.5)


def test_goal_tests_are_the_envs_own_terminations():
    from bird.envs.gym.metrics import acrobot_tip_above_line, mountain_car_at_goal

    assert mountain_car_at_goal(np.array([0.45, 0.0]), {}) and not mountain_car_at_goal(np.array([0.45, -0.01]), {})
    assert not mountain_car_at_goal(np.array([0.44, 0.05]), {})
    down = np.array([1.0, 0.0, 1.0, 0.0, 0.0, 0.0])  # hanging straight down: the tip 2 links below the pivot
    up = np.array([-1.0, 0.0, 1.0, 0.0, 0.0, 0.0])  # straight up: 2 links above
    level = np.array([0.0, 1.0, 1.0, 0.0, 0.0, 0.0])  # horizontal: the tip level with the pivot
    bent = np.array([math.cos(2.1), math.sin(2.1), math.cos(1.0), math.sin(1.0), 0.0, 0.0])  # tip at 1.5 links
    assert acrobot_tip_above_line(up, {}) and not acrobot_tip_above_line(down, {})
    assert not acrobot_tip_above_line(level, {}) and acrobot_tip_above_line(bent, {})


def test_running_backward_is_the_forward_displacement_negated_on_the_same_episode():
    """gym/half_cheetah_backward against mujoco/half_cheetah: the same seed and actions, opposite quantities."""
    quantities = []
    for env_id in ("gym/half_cheetah_backward", "mujoco/half_cheetah"):
        env = make_adapter(replace(env_config(env_id), horizon=40)).make_unanchored_env(seed=4)
        env.reset(seed=4)
        rng = np.random.default_rng(0)
        while True:
            *_, term, trunc, info = env.step(rng.uniform(-1, 1, 6))
            if term or trunc:
                quantities.append(info["bird_episode"]["quantity"])
                break
    assert quantities[0] == pytest.approx(-quantities[1]) and abs(quantities[0]) > 1e-3


# -- what a task without a reference reward refuses -----------------------------------------------------------------
def test_a_reference_signal_is_refused_on_bird_tasks_without_a_published_reward():
    for task in ("hopper_hop_in_place", "half_cheetah_backward", "half_cheetah_target_speed", "swimmer_heading",
                 "reacher_hold"):
        with pytest.raises(ConfigError, match=f"feedback.fitness=reference_return needs a reference reward, and "
                                              f"task gym/{task} has none"):
            compose(["method=eureka", f"env=gym/{task}", "feedback.fitness=reference_return"])
    # the same method runs with the benchmark score as its signal, and era_u (judge-ranked) as shipped
    assert compose(["method=eureka", "env=gym/swimmer_heading", "feedback.fitness=benchmark_score",
                    "feedback.score_shown=benchmark_score"]).env.task.reference_reward == "none"
    assert compose(["method=era_u", "env=gym/hopper_hop_in_place"]).feedback.fitness == "judge_score"


def test_a_task_file_that_names_a_scripted_expert_serves_scripted_demonstrations(tmp_path, monkeypatch):
    """hopper_hop_in_place names no source of demonstrations: GRACE is refused. The same file with env.task.expert (a
    user's policy factory) composes, and its demonstrations are that policy's actions."""
    (tmp_path / "my_experts.py").write_text("import numpy as np\n\ndef still():\n    return lambda obs: np.zeros(3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError, match="names no source of expert demonstrations"):
        compose(["method=grace", "env=gym/hopper_hop_in_place"])
    cfg = compose(["method=grace", "env=gym/hopper_hop_in_place", "env.task.expert=my_experts:still"])
    assert cfg.demos.enabled and cfg.env.task.expert == "my_experts:still"
    adapter = make_adapter(replace(cfg.env, horizon=20))
    from bird.envs.demos import record_episode

    episode = record_episode(adapter.make_env(), adapter.expert_policy(), seed=0)
    assert len(episode["action"]) > 0 and not episode["action"].any()


# -- a discrete action --------------------------------------------------------------------------------------------
def test_acrobots_discrete_action_is_one_slot_and_its_policy_round_trips_through_policy_npz(tmp_path):
    from stable_baselines3 import PPO
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    from bird.learners.sb3_policy import load_policy, save_policy

    adapter = make_adapter(env_config("gym/acrobot"))
    spec = adapter.spec
    assert (spec.action_dim, spec.action_low, spec.action_high) == (1, (0.0,), (2.0,))
    assert spec.extra["action_kind"] == "discrete" and spec.extra["action_n"] == 3
    venv = VecNormalize(DummyVecEnv([adapter.make_env]), norm_reward=False)
    model = PPO("MlpPolicy", venv, n_steps=64, batch_size=32, n_epochs=1, seed=0, device="cpu")
    model.learn(64)
    save_policy(model, venv, tmp_path / "policy.npz")
    obs = np.random.default_rng(0).normal(size=(5, 6))
    act = load_policy(tmp_path / "policy.npz", deterministic=True)
    expected = model.predict(venv.normalize_obs(obs), deterministic=True)[0]
    assert np.array_equal(act(obs), expected) and set(act(obs)) <= {0, 1, 2}


# -- the PPO expert ---------------------------------------------------------------------------------------------------
def _cheap_expert(env_id: str):
    """The session's 2,048-step PPO expert of `env_id` (trained by the first test that asks, then cached)."""
    from bird.learners.expert import ppo_expert
    from bird.learners.sb3_ppo import train_ppo

    return ppo_expert(env_config(env_id), CHEAP_EXPERT_STEPS, 0, train_ppo)


def test_a_ppo_expert_is_trained_once_cached_with_its_record_and_read_back_without_training():
    from bird.files import read_json
    from bird.learners.expert import RECORD_NAME, expert_dir, ppo_expert

    expert = _cheap_expert("gym/pendulum")
    folder = expert_dir(env_config("gym/pendulum"), CHEAP_EXPERT_STEPS, 0)
    record = read_json(folder / RECORD_NAME, "record")
    assert record["env_id"] == "gym/pendulum" and record["env_steps"] == CHEAP_EXPERT_STEPS and record["curve"]
    assert record["reward"] == "the task's reference reward" and record["ppo"]["n_epochs"] == 10
    assert sorted(p.name for p in folder.iterdir()) == ["checkpoint.json", "curve.csv", "policy.npz", "record.json"]
    assert "2,048 env steps on the task's reference reward" in expert.description

    def no_training(job):
        raise AssertionError("a cached expert was trained again")

    again = ppo_expert(env_config("gym/pendulum"), CHEAP_EXPERT_STEPS, 0, no_training)
    obs = np.array([1.0, 0.0, 0.3])
    assert np.array_equal(again.policy(obs), expert.policy(obs)) and again.name == expert.name
    other = replace(env_config("gym/pendulum"), horizon=100)  # another task config: another expert
    assert expert_dir(other, CHEAP_EXPERT_STEPS, 0) != folder


def test_a_cached_expert_for_another_task_is_refused_naming_its_folder():
    from bird.files import read_json, write_json
    from bird.learners.expert import RECORD_NAME, expert_dir, load_expert

    _cheap_expert("gym/pendulum")
    folder = expert_dir(env_config("gym/pendulum"), CHEAP_EXPERT_STEPS, 0)
    record = read_json(folder / RECORD_NAME, "record")
    try:
        write_json(folder / RECORD_NAME, {**record, "env_id": "gym/acrobot"})
        with pytest.raises(ValueError, match=f"the cached PPO expert {folder} is not gym/pendulum"):
            load_expert(folder, "gym/pendulum", CHEAP_EXPERT_STEPS)
    finally:
        write_json(folder / RECORD_NAME, record)


def test_demonstrations_of_a_falling_expert_keep_each_episodes_own_length():
    """Walker2d ends an episode when it falls: the demos are padded to the longest, and the demo set (what GRACE scores
    rewards on) keeps only each episode's own states."""
    from bird.components.demos import _episodes
    from bird.envs.demos import load_demos

    expert = _cheap_expert("mujoco/walker2d")
    demos = load_demos("mujoco/walker2d", 3, 0, "expert", expert=expert)
    assert demos.length is not None and demos.length.min() < demos.obs.shape[1]  # a fall before the horizon
    eps = _episodes(demos.next_obs, np.ones(demos.next_obs.shape[:2]), "expert", demos.valid)
    assert len(eps.states) == int(demos.length.sum())
    assert [int((eps.episode == e).sum()) for e in range(3)] == [int(n) for n in demos.length]


# -- the catalogue --------------------------------------------------------------------------------------------------
def test_docs_tasks_md_is_the_catalogue_as_generated():
    """docs/tasks.md is `python -m bird.envs list format=markdown`: regenerate it after changing a task or a method."""
    from bird.envs.catalogue import catalogue, render_markdown

    rows = catalogue()
    assert (ROOT / "docs" / "tasks.md").read_text() == render_markdown(rows), \
        "docs/tasks.md is stale: python -m bird.envs list format=markdown > docs/tasks.md"
    by_id = {r.env_id: r for r in rows}
    assert not by_id["gym/hopper_hop_in_place"].reference_reward and "era_u" in by_id["gym/hopper_hop_in_place"].methods
    assert "eureka" in by_id["gym/hopper_hop_in_place"].benchmark_methods
    assert by_id["mujoco/walker2d"].demonstrations == "PPO expert" and "grace" in by_id["mujoco/walker2d"].methods
    assert by_id["metaworld/push"].demonstrations == "scripted" and by_id["gym/reacher_hold"].demonstrations == "none"


def test_a_smoke_search_stopped_at_its_time_limit_is_shown_as_timed_out_not_failed():
    """A smoke search the time limit stopped (a busy machine) is neither passed nor FAILED in docs/tasks.md."""
    from bird.envs.catalogue import TaskRow, render_markdown
    from bird.envs.catalogue_smoke import _one

    rows = [TaskRow(env_id, "gym", 200, "a score", True, False, "none", True, ("eureka",), ())
            for env_id in ("gym/acrobot", "gym/pendulum", "gym/reacher_hold")]
    assert _one(rows[1], timeout_s=0.05)["passed"] == "timeout"  # killed long before it could finish
    row = {"date": "2026-12-04 22:00", "machine": "m", "method": "eureka", "wall_s": "900.0"}
    smoke = {"gym/acrobot": {**row, "passed": "yes"}, "gym/pendulum": {**row, "passed": "timeout"},
             "gym/reacher_hold": {**row, "passed": "no"}}
    page = render_markdown(rows, smoke)
    cells = {r.env_id: next(line for line in page.splitlines() if line.startswith(f"| `{r.env_id}`")) for r in rows}
    assert "eureka: timed out, 900 s" in cells["gym/pendulum"] and "eureka: passed" in cells["gym/acrobot"]
    assert "eureka: FAILED" in cells["gym/reacher_hold"]
    assert "**1 passed**, 1 stopped at the time limit" in page


# -- searches, one per kind of task (slow) ---------------------------------------------------------------------------
def _final_curve(run: Path) -> list[dict[str, float]]:
    import csv

    (curve,) = run.glob("final/*/curve.csv")
    with open(curve, newline="") as fh:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(fh)]


@pytest.mark.slow
def test_era_u_hops_in_place_and_is_scored_on_birds_hop_minus_drift(compose_cfg, tmp_path):
    """The issue's first line: method=era_u env=gym/hopper_hop_in_place budget=smoke completes, scored on BIRD's
    hop-minus-drift metric (the quantity) above the task's random anchor."""
    from bird.loop import search

    cfg = compose_cfg("method=era_u", "env=gym/hopper_hop_in_place")
    result = search(cfg, tmp_path)
    assert result["status"] == "completed" and math.isfinite(result["returned_score"])
    assert "hop_minus_drift" in result["score_definition"]
    curve = _final_curve(tmp_path)
    random = cfg.env.task.score.random
    assert all(row["score"] == pytest.approx(row["quantity"] - random) for row in curve)
    assert any(result["returned_score"] == pytest.approx(row["score"]) for row in curve)


@pytest.mark.slow
@pytest.mark.parametrize("env", ["gym/swimmer_heading", "gym/acrobot", "gym/mountain_car_continuous",
                                 "mujoco/humanoid"])
def test_eureka_searches_each_kind_of_new_task(compose_cfg, tmp_path, env):
    """A task without a reference reward (eureka ranking on the benchmark score), a discrete action, a success flag,
    and GRACE's largest Gym MuJoCo body: a smoke search of one iteration each."""
    from bird.loop import search

    signal = ["feedback.fitness=benchmark_score", "feedback.score_shown=benchmark_score"] if "swimmer" in env else []
    cfg = compose_cfg("method=eureka", f"env={env}", "budget.max_iterations=1", "env.horizon=100", *signal)
    result = search(cfg, tmp_path)
    assert result["status"] == "completed" and math.isfinite(result["returned_score"]), result["no_return_reason"]


@pytest.mark.slow
def test_grace_on_walker2d_learns_from_a_cached_ppo_experts_demos(compose_cfg, tmp_path):
    """The issue's line: method=grace env=mujoco/walker2d budget=smoke completes with demonstrations from a cached PPO
    expert, named as a substitute in result.json (the smoke budget's 2,048-step expert: cheap, and labelled so)."""
    from bird.learners.expert import expert_dir
    from bird.loop import search

    cfg = compose_cfg("method=grace", "env=mujoco/walker2d")
    assert cfg.budget.expert_env_steps == CHEAP_EXPERT_STEPS
    _cheap_expert("mujoco/walker2d")  # cached before the search: the search reads it, it does not train one
    cached = expert_dir(cfg.env, CHEAP_EXPERT_STEPS, 0)
    before = (cached / "policy.npz").stat().st_mtime_ns
    result = search(cfg, tmp_path)
    assert result["status"] == "completed" and math.isfinite(result["returned_score"]), result["no_return_reason"]
    label = [s for s in result["substitutes"] if s.startswith("expert demonstrations from a PPO expert")]
    assert label and "2,048 env steps on the task's reference reward" in label[0]
    assert any("the paper does not say where its demonstrations came from" in s for s in result["substitutes"])
    import json

    assert json.loads((tmp_path / "demos.json").read_text())["expert"] == label[0].removeprefix(
        "expert demonstrations from ")
    assert (cached / "policy.npz").stat().st_mtime_ns == before
