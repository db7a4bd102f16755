"""The TPE pass rule (CARD utils.py trajectories_return_check) and the screen on a hand-made trajectory store."""

import numpy as np
import pytest

from bird.components.trajectories import TrajectoryStore, tpe_rule


def test_pass_when_enough_successes_beat_the_best_failure():
    v = tpe_rule(np.array([3.0, 2.0, 1.0, 5.0, 4.0]), np.array([0.5, 1.5]), 0.8)
    assert v["rate"] == pytest.approx(0.8) and v["pass"] and v["n_below"] == 1 and not v["vacuous"]


def test_fail_below_threshold_and_ties_do_not_count_as_above():
    v = tpe_rule(np.array([2.0, 1.5, 1.5]), np.array([1.5]), 0.8)
    assert v["rate"] == pytest.approx(1 / 3) and not v["pass"]


def test_successes_are_compared_with_the_best_failure_not_the_mean_failure():
    # failures 0.0 and 1.5 (mean 0.75): the success at 1.2 beats the mean but not the best failure
    v = tpe_rule(np.array([2.0, 1.2]), np.array([0.0, 1.5]), 0.8)
    assert v["rate"] == pytest.approx(0.5) and v["n_below"] == 1 and not v["pass"]
    assert tpe_rule(np.array([2.0, 1.2]), np.array([0.0, 1.5]), 0.5)["pass"]


def test_rate_exactly_at_threshold_passes():
    assert tpe_rule(np.array([2.0, 0.0]), np.array([1.0]), 0.5)["pass"]


@pytest.mark.parametrize("succ,fail", [([], []), ([1.0, 2.0], []), ([], [1.0, 2.0])])
def test_empty_or_one_sided_store_passes_vacuously(succ, fail):
    v = tpe_rule(np.array(succ), np.array(fail), 0.8)
    assert v["pass"] and v["vacuous"] and v["rate"] == 1.0


def _store() -> TrajectoryStore:
    """Two episodes of 3 steps: episode 0 succeeded with the hand at x = 1, episode 1 failed with x = 0."""
    obs = np.zeros((6, 39))
    obs[:3, 0] = 1.0
    data = {"obs": obs, "actions": np.zeros((6, 4)), "next_obs": obs, "episode": np.array([0, 0, 0, 1, 1, 1])}
    store = TrajectoryStore()
    store.add(data, np.array([True, False]), "it1-c0")
    return store


@pytest.mark.parametrize("sign,screened", [("", False), ("-", True)])
def test_screen_rescores_the_store_and_screens_a_misranking_reward(compose_cfg, sign, screened):
    from bird.envs.registry import make_adapter
    from bird.stages.verify import verify
    from bird.state import Plan, SearchState
    from bird.types import Candidate

    cfg = compose_cfg("method=card", "env=metaworld/reach")
    code = ("import numpy as np\n\ndef compute_reward(obs, action, next_obs, info):\n"
            f"    r = {sign}next_obs['hand_pos'][:, 0]\n    return r, {{'x': r}}\n")
    state = SearchState(make_adapter(cfg.env).spec, Plan(1, 3, 10, 10, 1, 1), 0,
                        {"obs": np.zeros((4, 39)), "actions": np.zeros((4, 4)), "next_obs": np.zeros((4, 39))})
    state.trajectories = _store()
    cand = Candidate("it2-c0", 2, 0, [], code=code)
    result = verify(cfg, state, [cand])[cand.id]
    verdict = result.checks["tpe"]
    assert cand.screened is screened and verdict["store_episodes"] == 2 and not verdict["vacuous"]
    assert verdict["rate"] == (0.0 if screened else 1.0)
    if screened:
        from bird.stages.feedback import feedback

        report = feedback(cfg, state, [cand], {})[cand.id]
        assert "0% accurate" in report.feedback and report.stats["preference"]["n_below"] == 1
