"""GRACE's state-only Reward class through the sandbox: state carried within an episode, reset between episodes
and on request, carried across calls, debug_fn output on asked rows; static checks of the contract."""

import numpy as np
import pytest

from bird.envs.base import ObsField, ObsIndex
from bird.reward.sandbox import RewardProgramError, SandboxedReward
from bird.reward.static import check_source

COUNTER = """
class Reward:
    def __init__(self, extra_info=None):
        self.t = 0

    def reward_fn(self, state):
        self.t += 1
        return self.t + 0.001 * state['x']

    def debug_fn(self, state):
        return 't=' + str(self.t)
"""
INDEX = ObsIndex((ObsField("x", 0, 1, "position"), ObsField("v", 1, 2, "velocity")), 3)


def _call(program, rows, dones, n_envs, **kw):
    obs = np.zeros((rows, 3))
    return program(obs, np.zeros((rows, 1)), obs, dones=np.asarray(dones, dtype=bool), n_envs=n_envs, **kw)[0]


def test_state_is_carried_within_an_episode_and_reset_between_episodes():
    with SandboxedReward(COUNTER, INDEX, contract="reward_class") as program:
        # (T=3, n_envs=2) time-major; env 0 ends an episode after t=1
        got = _call(program, 6, [0, 0, 1, 0, 0, 0], n_envs=2, reset=True)
        np.testing.assert_allclose(got, [1, 1, 2, 2, 1, 3])
        # the next call continues every open episode
        np.testing.assert_allclose(_call(program, 2, [0, 0], n_envs=2), [2, 4])
        # reset starts every env slot afresh
        np.testing.assert_allclose(_call(program, 2, [0, 0], n_envs=2, reset=True), [1, 1])


def test_debug_fn_output_comes_back_for_asked_rows_only():
    with SandboxedReward(COUNTER, INDEX, contract="reward_class") as program:
        _call(program, 4, [0, 0, 0, 1], n_envs=1, reset=True, debug_rows=[2])
        assert program.last_debug == {2: "t=3"}


def test_state_is_a_dict_of_named_fields():
    code = "class Reward:\n    def __init__(self, extra_info=None):\n        pass\n\n" \
           "    def reward_fn(self, state):\n        return float(state['v'][1]) + state['x']\n"
    with SandboxedReward(code, INDEX, contract="reward_class") as program:
        obs = np.array([[1.0, 0.0, 5.0], [2.0, 0.0, 7.0]])
        reward, comps = program(obs, np.zeros((2, 1)), obs, dones=np.array([0, 1]))
        np.testing.assert_allclose(reward, [6.0, 9.0]) and comps == {}


def test_contract_static_checks_and_runtime_errors():
    assert check_source(COUNTER, "Reward", contract="reward_class") is None
    assert check_source("def compute_reward(obs, action, next_obs, info):\n    return 0, {}\n", "Reward",
                        contract="reward_class").kind == "bad_signature"
    assert check_source("class Reward:\n    def other(self, s):\n        return 0\n", "Reward",
                        contract="reward_class").kind == "bad_signature"
    bad = COUNTER.replace("self.t + 0.001", "self.missing + 0.001")
    with pytest.raises(RewardProgramError) as err, SandboxedReward(bad, INDEX, contract="reward_class") as program:
        _call(program, 2, [0, 1], n_envs=1)
    assert err.value.failure.kind == "runtime_error"
