"""GRACE where GRACE was published, end to end at budget=smoke (offline synthesiser), and the oracle arm on BabyAI;
the oracle's refusal on a task without a reference reward."""

from __future__ import annotations

import json
import math

import pytest

from bird.config.errors import ConfigError
from bird.loop import search

SMALL_DEMOS = ("demos.n_expert=4", "demos.n_negative=4", "demos.max_train=4")


@pytest.mark.slow
def test_grace_on_gotoredball_records_reward_accuracy_per_generation_and_trains_a_policy(compose_cfg, tmp_path):
    result = search(compose_cfg("method=grace", "env=babyai/GoToRedBall", *SMALL_DEMOS), tmp_path)
    per_gen = result["reward_accuracy"]["per_generation"]
    assert [g["generation"] for g in per_gen] == [1, 2] and result["reward_accuracy"]["metric"] == "demo_pairwise"
    assert all(0.0 <= g["train"] <= 1.0 and 0.0 <= g["test"] <= 1.0 for g in per_gen)
    assert [it["reward_accuracy"]["test"] for it in result["iterations"]] == [g["test"] for g in per_gen]
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert sum("reward_accuracy" in e for e in events if e.get("event") == "iteration_done") == 2  # the run dir too
    assert math.isfinite(result["returned_score"]) and 0.0 <= result["returned_score"] <= 1.0  # a success rate
    assert result["env_steps"] == 2048  # the final retrain only: demo fitness trains nothing in the loop
    assert any(s.startswith("BabyAI policy: SB3 PPO with a small CNN") for s in result["substitutes"])


@pytest.mark.slow
def test_grace_with_no_learner_stops_before_rl_with_accuracy_only(compose_cfg, tmp_path):
    result = search(compose_cfg("method=grace", "env=babyai/PlaceBetween", "train.learner=none", *SMALL_DEMOS),
                    tmp_path)
    assert result["returned"] is not None and result["returned_score"] is None and result["env_steps"] == 0
    assert (result["status"], result["stops_before_rl"]) == ("completed", True)  # the reward is the product
    assert result["reward_accuracy"]["test"] is not None and not (tmp_path / "final").exists()
    assert any(s.startswith("PlaceBetween, OpenMatchingDoor, SortColors: bird's own") for s in result["substitutes"])


@pytest.mark.slow
def test_the_oracle_trains_the_reference_reward_with_no_generator(compose_cfg, tmp_path):
    result = search(compose_cfg("method=oracle", "env=babyai/GoToRedBall"), tmp_path)
    assert result["llm_calls"] == 0 and result["reward_source"] == "reference"
    assert result["generator"]["provider"] == "none" and result["returned"]["code_path"] is None
    assert math.isfinite(result["returned_score"]) and result["env_steps"] == 2048  # one training: the final
    assert not (tmp_path / "llm_calls.jsonl").exists() or not (tmp_path / "llm_calls.jsonl").read_text().strip()


def test_the_oracle_is_refused_where_the_task_has_no_reference_reward(compose_cfg):
    with pytest.raises(ConfigError, match=r"train.reward_source=reference needs a reference reward, and task "
                                          r"gym/hopper_hop_in_place has none"):
        compose_cfg("method=oracle", "env=gym/hopper_hop_in_place")


@pytest.mark.parametrize("env", ["babyai/GoToRedBall", "mujoco/hopper", "metaworld/reach"])
def test_the_oracle_composes_on_tasks_with_a_reference_reward_and_trains_only_the_final(compose_cfg, env):
    from bird.learners.job import final_learner, loop_learner

    cfg = compose_cfg("method=oracle", f"env={env}")
    assert (loop_learner(cfg), final_learner(cfg), cfg.train.reward_source) == ("none", "sb3_ppo", "reference")
