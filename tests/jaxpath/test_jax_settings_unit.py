"""bird/learners/jax_settings.py on settings where each halving rule decides the result (the precedence of the
command line, the task table and Brax's defaults: test_jax_learner.py::test_settings_*)."""

from __future__ import annotations

import pytest

from bird.config.schema import JaxPPOConfig
from bird.learners.jax_settings import BRAX_DEFAULTS, PPOSettings, resolve_settings


def _settings(env_steps: int, min_updates: int, **given) -> PPOSettings:
    cfg = JaxPPOConfig(unroll_length=10, min_updates=min_updates, **given)
    return resolve_settings(cfg, "hopper", env_steps, False)


def _batch(s: PPOSettings) -> tuple:
    return s.num_envs, s.batch_size, s.num_minibatches


def _all_ints(s: PPOSettings) -> bool:
    return all(type(getattr(s, k)) is int for k in ("num_envs", "batch_size", "num_minibatches", "n_updates"))


def test_envs_and_batch_halve_together_then_envs_and_minibatches_until_the_budget_fits():
    # 8 envs x 2 x 8 minibatches x 10 steps = 160 a update; 4 updates of 100 steps need at most 25
    s = _settings(100, 4, num_envs=8, batch_size=2, num_minibatches=8)
    assert _batch(s) == (1, 1, 2) and s.steps_per_update == 20 and s.n_updates == 5 and _all_ints(s)
    assert s.scaled_from == {"num_envs": 8, "batch_size": 2, "num_minibatches": 8}


def test_minibatches_halve_down_to_one():
    s = _settings(10, 1, num_envs=4, batch_size=1, num_minibatches=4)  # 40 steps an update; the budget is 10
    assert _batch(s) == (1, 1, 1) and s.steps_per_update == 10 and s.n_updates == 1


def test_halving_stops_when_num_envs_reaches_one_even_if_the_budget_still_does_not_fit():
    s = _settings(100, 10, num_envs=2, batch_size=8, num_minibatches=1)
    assert _batch(s) == (1, 4, 1) and s.n_updates == 3 and _all_ints(s)


def test_with_one_env_nothing_is_halved():
    s = _settings(10, 100, num_envs=1, batch_size=1, num_minibatches=4)
    assert _batch(s) == (1, 1, 4) and s.scaled_from is None and s.n_updates == 1


def test_halving_stops_before_a_batch_that_num_envs_would_not_divide():
    s = _settings(100, 10, num_envs=6, batch_size=3, num_minibatches=2)  # 1 x 2 is no multiple of 3 envs
    assert _batch(s) == (6, 3, 2) and s.scaled_from is None


def test_a_budget_that_affords_exactly_min_updates_is_not_scaled():
    s = _settings(100, 5, num_envs=2, batch_size=2, num_minibatches=1)  # 20 steps an update, 5 updates
    assert _batch(s) == (2, 2, 1) and s.scaled_from is None and s.n_updates == 5


def test_a_training_has_at_least_one_update_and_rounds_partial_updates_up():
    assert _settings(0, 1, num_envs=1, batch_size=1, num_minibatches=1).n_updates == 1
    assert _settings(10, 1, num_envs=1, batch_size=1, num_minibatches=1).n_updates == 1
    assert _settings(11, 1, num_envs=1, batch_size=1, num_minibatches=1).n_updates == 2


def test_layer_sizes_become_tuples_of_ints_and_normalize_reward_is_kept():
    cfg = JaxPPOConfig(policy_hidden_layer_sizes=[64.0, "32"], min_updates=1)  # type: ignore[list-item]
    s = resolve_settings(cfg, "hopper", 10**6, True)
    assert s.policy_hidden_layer_sizes == (64, 32) and type(s.policy_hidden_layer_sizes[0]) is int
    assert s.value_hidden_layer_sizes == BRAX_DEFAULTS["value_hidden_layer_sizes"]
    assert s.normalize_reward is True
    assert resolve_settings(cfg, "hopper", 10**6, False).normalize_reward is False


@pytest.mark.parametrize("key", ["num_envs", "unroll_length", "batch_size", "num_minibatches", "num_updates_per_batch",
                                 "action_repeat"])
def test_a_count_below_one_is_refused_naming_the_key_and_value(key):
    with pytest.raises(ValueError) as err:
        resolve_settings(JaxPPOConfig(**{key: 0}), "hopper", 10**6, True)
    assert str(err.value) == f"train.jax.{key}=0: must be >= 1"


def test_the_json_record_holds_every_setting_and_the_steps_per_update():
    s = _settings(100, 4, num_envs=8, batch_size=2, num_minibatches=8)
    record = s.to_json()
    assert record["steps_per_update"] == 20 and record["num_envs"] == 1 and record["n_updates"] == 5
    assert record["scaled_from"] == {"num_envs": 8, "batch_size": 2, "num_minibatches": 8}
    assert set(record) == {*BRAX_DEFAULTS, "normalize_reward", "n_updates", "scaled_from", "steps_per_update"}
