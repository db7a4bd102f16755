"""The generalisation protocol (`+protocol=prm4rl_generalisation`, PRM4RL App. B.1) as config: its tasks, seeds and
episodes; transfer.* refused where it cannot run, naming the key; the one-hot prior of a plan of another length."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from bird.config.load import CONF_DIR, ConfigError, compose, config_hash
from bird.registry import get

PROTOCOL = "+protocol=prm4rl_generalisation"
# PRM4RL App. B.1, written out here from the paper: source -> unseen tasks, in its order
APP_B1 = {"metaworld/faucet_open": ["metaworld/drawer_close", "metaworld/button_press_wall", "metaworld/button_press",
                                    "metaworld/coffee_button"],
          "metaworld/pick_place": ["metaworld/drawer_close", "metaworld/pick_place_wall", "metaworld/sweep_into",
                                   "metaworld/handle_press"]}


def test_the_protocol_trains_prm4rl_on_each_source_and_evaluates_app_b1s_unseen_tasks():
    cfg = compose([PROTOCOL, "budget=smoke"])
    assert cfg.method == "prm4rl" and cfg.env.id == "metaworld/faucet_open"
    assert cfg.transfer.tasks == APP_B1 and cfg.transfer.episodes == 100  # "100 test per seed"
    assert compose([PROTOCOL, "env=metaworld/pick_place"]).env.id == "metaworld/pick_place"
    params = yaml.safe_load((CONF_DIR / "protocol" / "prm4rl_generalisation.yaml").read_text())["hydra"]["sweeper"]
    assert params["params"] == {"env": ",".join(APP_B1), "seed": "range(5)"}  # "averaged over 5 seeds"
    text = (CONF_DIR / "protocol" / "prm4rl_generalisation.yaml").read_text()
    assert "[AMB]" in text and "App. B.1" in text


def test_transfer_is_refused_where_it_cannot_run_naming_the_key():
    cases = {"env=metaworld/push": "transfer.tasks has no unseen tasks for env.id='metaworld/push'",
             "final.retrain=false": "transfer.tasks needs final.retrain=true",
             "transfer.episodes=0": "transfer.episodes=0",
             "transfer.tasks={metaworld/faucet_open:[mujoco/hopper]}": "'mujoco/hopper' is not a task of suite 'metaworld'",
             "transfer.tasks={metaworld/faucet_open:[metaworld/nosuch]}": "unknown metaworld task 'nosuch'",
             "final.learner=jax_ppo": "the final retrain's learner is 'jax_ppo'"}
    for override, message in cases.items():
        with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace(".", r"\.")):
            compose([PROTOCOL, "budget=smoke", override])


def test_a_config_without_transfer_hashes_as_before_the_key_existed():
    """The transfer section is left out of the hash when it names no task (as plugins and env.task are), so every
    config that sets none keeps the hash it had before the key existed; with tasks it is hashed."""
    from dataclasses import replace

    plain = compose(["method=prm4rl", "env=metaworld/faucet_open", "budget=smoke"])
    assert config_hash(plain) == config_hash(replace(plain, transfer=replace(plain.transfer, episodes=7)))
    assert config_hash(plain) != config_hash(compose([PROTOCOL, "budget=smoke"]))


def test_the_one_hot_prior_maps_a_longer_plan_onto_the_trained_slots():
    onehot = get("obs_augment", "subtask_onehot")
    np.testing.assert_array_equal(onehot(["a", "b"]), np.eye(2))
    np.testing.assert_array_equal(onehot(["a", "b", "c"], 2), [[1, 0], [0, 1], [0, 1]])
    np.testing.assert_array_equal(onehot(["a"], 3), [[1, 0, 0]])
