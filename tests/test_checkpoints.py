"""Peak own-reward checkpoint (BIRD choice (16)) and early stopping on own reward: one mechanism for every learner."""

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from bird.config.schema import EnvConfig, TrainConfig
from bird.learners.checkpoints import CheckpointKeeper
from bird.learners.job import TrainJob
from bird.registry import get, register

CODE = (
    "import numpy as np\n\ndef compute_reward(obs, action, next_obs, info):\n"
    "    up = np.exp(-next_obs['hinge_angle'] ** 2 / 0.1)\n    return up, {'upright': up}\n"
)


def _curve(own, scores=None):
    """Hand-made checkpoints with only env_steps and eval_own_return (no task metric to consult)."""
    return [SimpleNamespace(env_steps=100 * (i + 1), eval_own_return=v) for i, v in enumerate(own)]


def _offer_all(rule, own):
    keeper = CheckpointKeeper(TrainConfig(checkpoint_selection=rule))
    taken = []
    for i, ckpt in enumerate(_curve(own)):
        keeper.offer(ckpt, lambda i=i: taken.append(i) or f"params{i}")
    return keeper, taken


def test_peak_checkpoint_is_the_argmax_of_own_return_first_on_ties_and_never_reads_the_task_metric():
    # task metric (absent here: SimpleNamespace has no `score`) would pick the last; own return peaks at 1 and 2 (tie)
    keeper, taken = _offer_all("best_own_return", [1.0, 3.0, 3.0, 2.0])
    index, params, record = keeper.choose()
    assert (index, params) == (1, "params1") and taken == [0, 1]  # snapshots only at new running bests
    assert record["index"] == 1 and record["env_steps"] == 200 and "first on ties" in record["reason"]
    assert record["eval_own_returns"] == [1.0, 3.0, 3.0, 2.0]


def test_peak_checkpoint_ships_the_live_policy_when_the_last_checkpoint_is_best():
    keeper, taken = _offer_all("best_own_return", [1.0, math.nan, 0.5, 4.0])
    assert keeper.choose()[:2] == (3, None) and taken == [0, 3]


def test_final_rule_ships_the_last_checkpoint_without_snapshots():
    keeper, taken = _offer_all("final", [5.0, 1.0, 0.0])
    assert keeper.choose()[:2] == (2, None) and taken == []


def test_all_nan_own_returns_ship_the_last_checkpoint_and_say_why():
    keeper, _ = _offer_all("best_own_return", [math.nan, math.nan])
    index, params, record = keeper.choose()
    assert (index, params) == (1, None) and "no finite own return" in record["reason"]


@pytest.mark.parametrize("own,stops", [
    ([1, 2, 3, 3, 3, 3, 3], True),     # five checkpoints without beating 3: plateau
    ([1, 2, 3, 3, 3, 3, 3.5], False),  # the last beats the earlier best by more than 2% of the range
    ([3, 3, 3, 3], False),             # fewer than early_stop_min_checkpoints
])
def test_plateau_early_stop_reads_own_return_only(own, stops):
    stop = get("early_stop", "plateau")([float(v) for v in own], TrainConfig(early_stop="plateau"))
    assert (stop is not None) == stops


register("checkpoint_selection", "test_first", needs_eval_own_return=True)(lambda own: (0, "test: the first checkpoint"))


@pytest.mark.slow
def test_sb3_ships_evaluates_and_saves_the_parameters_of_the_chosen_checkpoint(tmp_path):
    from bird.envs.registry import make_adapter
    from bird.learners.evaluate import Evaluator
    from bird.learners.sb3_policy import load_policy
    from bird.learners.sb3_ppo import train_ppo

    env = EnvConfig(id="mujoco/inverted_pendulum", description="x", horizon=200)
    job = TrainJob("t", CODE, env, TrainConfig(checkpoint_selection="test_first"), 0, 2048, 2, 4, 2, 5.0, 2048,
                   str(tmp_path), save_policy=True)
    res = train_ppo(job)
    assert res.ok and res.shipped == 0 and len(res.curve) == 4
    first, last = res.curve[0], res.curve[-1]
    assert (first.score, first.eval_own_return) != (last.score, last.eval_own_return)  # the choice matters
    assert json.loads((tmp_path / "checkpoint.json").read_text())["index"] == 0
    adapter = make_adapter(env)
    assert res.policy_path == str(tmp_path / "policy.npz") and not list(tmp_path.glob("*.pkl"))
    act = load_policy(tmp_path / "policy.npz", deterministic=True)  # no pickle: parameters and statistics as arrays
    evaluator = Evaluator(adapter, 2, 0)
    again = evaluator(act, label=lambda data: np.ones(data["dones"].shape))  # own return of 1 per step = length
    evaluator.close()
    assert again["own_return"] == pytest.approx(again["episode_length"])
    assert all(0 < c.eval_own_return <= c.episode_length + 1e-9 for c in res.curve)  # upright reward is in (0, 1]
    assert again["score"] == pytest.approx(first.score) and again["episode_length"] == pytest.approx(first.episode_length)
