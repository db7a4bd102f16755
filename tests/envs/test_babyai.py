"""The babyai suite: GRACE's 20 levels, the bot on the three new ones, the observation a program reads, demos that end
early, what the task hides, and the grid policy's features."""

from __future__ import annotations

import numpy as np
import pytest

from bird.envs.babyai.levels import LEVELS
from bird.envs.demos import env_config, load_demos, record_episode
from bird.envs.registry import make_adapter
from bird.leaks import find_leaks, hidden_facts

NEW = [n for n, lv in LEVELS.items() if lv.new]


def _adapter(level: str):
    return make_adapter(env_config(f"babyai/{level}"))


def test_the_suite_has_gracess_twenty_levels_each_with_an_option_file():
    assert len(LEVELS) == 20 and NEW == ["PlaceBetween", "OpenMatchingDoor", "SortColors"]
    for name in LEVELS:
        assert env_config(f"babyai/{name}").id == f"babyai/{name}"


@pytest.mark.parametrize("level", NEW)
def test_the_bot_solves_each_new_level_on_100_seeded_episodes(level):
    adapter = _adapter(level)
    env, bot = adapter.make_env(), adapter.expert_policy()
    solved = [record_episode(env, bot, seed)["quantity"] for seed in range(100)]
    assert sum(solved) == 100


@pytest.mark.parametrize("level", NEW)
def test_a_random_agent_mostly_fails_each_new_level(level):
    env = _adapter(level).make_env()
    solved = [record_episode(env, None, 10_000 + seed)["quantity"] for seed in range(50)]
    assert np.mean(solved) < 0.25


def test_the_observation_is_the_grid_the_direction_and_the_mission():
    adapter = _adapter("GoToRedBall")
    env = adapter.make_env()
    obs, _ = env.reset(seed=3)
    u = env.unwrapped
    fields = adapter.spec.obs_index.split(obs[None])
    grid = fields["grid"].reshape(adapter.spec.obs_index.fields[0].shape)
    x, y = u.agent_pos
    assert tuple(grid[y, x]) == (10, 0, u.agent_dir)  # the agent's cell, indexed [row y, column x]
    ball = next(o for o in u.grid.grid if o is not None and o.type == "ball" and o.color == "red")
    assert tuple(grid[ball.cur_pos[1], ball.cur_pos[0], :2]) == (6, 0)
    assert fields["direction"][0] == u.agent_dir
    assert "".join(chr(int(c)) for c in fields["mission"][0] if c) == u.mission


def test_success_is_set_on_the_step_the_level_completes_its_instruction():
    adapter = _adapter("GoToRedBallNoDist")
    ep = record_episode(adapter.make_env(), adapter.expert_policy(), 0)
    assert ep["success"].tolist() == [False] * (len(ep["success"]) - 1) + [True]
    assert ep["reference_reward"][-1] > 0 and (ep["reference_reward"][:-1] == 0).all()  # BabyAI's sparse reward


def test_a_program_reads_the_grid_as_an_array_and_gets_the_mission_as_extra_info():
    from bird.reward.sandbox import SandboxedReward

    spec = _adapter("GoToObj").spec
    code = ("class Reward:\n    def __init__(self, extra_info=None):\n        self.goal = extra_info\n"
            "    def reward_fn(self, state):\n"
            "        assert state['mission'] == self.goal and isinstance(self.goal, str)\n"
            "        return float(state['grid'].shape[0] * 1000 + state['grid'].shape[2] * 100 + len(self.goal))\n")
    demos = load_demos("babyai/GoToObj", 2, 0, "expert")
    states = demos.next_obs[0, :2].astype(np.float64)
    mission = "".join(chr(int(c)) for c in states[0, -96:] if c)
    with SandboxedReward(code, spec.obs_index, contract="reward_class", entry="Reward") as program:
        reward, _ = program(states, np.zeros((2, 1)), states, dones=np.array([0.0, 1.0]), reset=True)
    assert reward.tolist() == [8 * 1000 + 3 * 100 + len(mission)] * 2


def test_demos_of_episodes_that_end_early_keep_each_episodes_length():
    demos = load_demos("babyai/GoToRedBallNoDist", 3, 0, "expert")
    assert demos.success_rate == 1.0
    lengths = demos.valid.sum(axis=1)
    assert lengths.max() == demos.obs.shape[1] and lengths.min() < lengths.max()  # padded to the longest
    short = int(np.argmin(lengths))
    assert demos.success[short, lengths[short] - 1] and not demos.success[short, lengths[short]:].any()
    assert (demos.next_obs[short, lengths[short]:] == demos.next_obs[short, lengths[short] - 1]).all()


def test_the_last_state_rule_marks_each_trajectorys_own_last_step(compose_cfg):
    from bird.components.demos import load_demo_set

    cfg = compose_cfg("method=grace", "env=babyai/GoToRedBallNoDist", "demos.n_expert=3", "demos.n_negative=2",
                      "demos.max_train=null", "demos.test_fraction=0")
    assert cfg.demos.positive_states == "last_if_terminal"  # the last state where the task ends on success
    demos = load_demo_set(cfg, make_adapter(cfg.env).spec)
    expert = load_demos(cfg.env.id, 3, cfg.demos.seed, "expert")
    train = demos.train
    for e in range(3):
        rows = np.flatnonzero(train.episode == e)
        assert len(rows) == expert.valid[e].sum()  # the padding is not a state
        assert train.label[rows].tolist() == [-1] * (len(rows) - 1) + [1]
    assert "goal_states" not in demos.meta  # no goal-state call (P0.1) on a task that ends on success


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_every_levels_views_build_and_name_nothing_the_task_hides(level):
    spec = _adapter(level).spec
    facts = hidden_facts(f"babyai/{level}")
    for view in (spec.env_code, spec.extra["full_source"]):
        assert view and not find_leaks(view, facts)


def test_the_level_source_with_its_instruction_left_in_is_caught():
    """Positive control: the level's class as minigrid ships it (its instruction, the success check, kept in)."""
    import inspect

    import gymnasium as gym
    import minigrid  # noqa: F401

    raw = inspect.getsource(type(gym.make("BabyAI-GoToRedBall-v0").unwrapped))
    assert find_leaks(raw, hidden_facts("babyai/GoToRedBall")) == ["names GoToInstr", "names instrs"]


def test_the_grid_policy_reads_grid_mission_and_direction_and_other_suites_keep_mlp():
    import torch

    from bird.learners.grid_policy import GridMissionExtractor, policy_for

    spec = _adapter("OpenTwoDoors").spec
    kwargs = policy_for(spec)
    assert kwargs["features_extractor_class"] is GridMissionExtractor
    assert kwargs["features_extractor_kwargs"] == {"grid": (0, 16, 16, 3), "text": (769, 96), "rest": [(768, 1)]}
    env = _adapter("OpenTwoDoors").make_env()
    obs = np.stack([env.reset(seed=s)[0] for s in range(2)])
    net = GridMissionExtractor(env.observation_space, **kwargs["features_extractor_kwargs"])
    feats = net(torch.as_tensor(obs))
    assert feats.shape == (2, 128)
    flipped = obs.copy()
    flipped[:, 769] = ord("x")  # another mission, the same grid: other features
    assert not torch.allclose(net(torch.as_tensor(flipped)), feats)
    assert policy_for(make_adapter(env_config("mujoco/hopper")).spec) is None
