"""train.eval_end_on_success: evaluation and collected episodes end at the first successful step (CARD's eval env)
on suites with a success flag; the benchmark score is unchanged; suites without a flag are unaffected."""

import numpy as np
import pytest

from bird.config.schema import EnvConfig
from bird.envs.registry import make_adapter
from bird.learners.evaluate import Evaluator
from bird.learners.rollouts import collect_rollouts


@pytest.fixture(scope="module")
def reach():
    adapter = make_adapter(EnvConfig(id="metaworld/reach", description="x", horizon=500))
    expert = adapter.expert_policy()
    return adapter, lambda obs: np.stack([expert(o) for o in obs])


@pytest.mark.parametrize("end_on_success", [True, False])
def test_metaworld_evaluation_ends_at_the_first_success_only_when_asked(reach, end_on_success):
    adapter, act = reach
    evaluator = Evaluator(adapter, 1, 0, end_on_success)
    try:
        out = evaluator(act)
    finally:
        evaluator.close()
    assert out["score"] == 1.0  # success on at least one step either way
    assert (out["episode_length"] < 500) == end_on_success


def test_collected_successful_episodes_are_shorter_with_end_on_success(reach):
    adapter, act = reach
    ended = collect_rollouts(adapter, act, 1, 0, end_on_success=True)
    full = collect_rollouts(adapter, act, 1, 0, end_on_success=False)
    assert ended["score"][0] == full["score"][0] == 1.0
    assert ended["length"][0] < full["length"][0] == 500
    np.testing.assert_allclose(ended["obs"], full["obs"][: ended["length"][0]])  # the same episode, cut at success


def test_suites_without_a_success_flag_are_unaffected():
    adapter = make_adapter(EnvConfig(id="mujoco/inverted_pendulum", description="x", horizon=1000))
    lengths = []
    for flag in (True, False):
        evaluator = Evaluator(adapter, 2, 0, flag)
        try:
            lengths.append(evaluator(lambda obs: np.zeros((len(obs), 1)))["episode_length"])
        finally:
            evaluator.close()
    assert lengths[0] == lengths[1]
