"""Candidate schedules (BIRD paper Table 6) and the policy-training budget."""

import json

import pytest

from bird.components.schedule import apportion
from bird.config.load import ConfigError
from bird.loop import make_plan, search
from bird.registry import get

FAST = ["env=mujoco/inverted_pendulum", "env.horizon=100", "budget.env_steps=512", "final.retrain=false"]


@pytest.mark.parametrize("name,expected", [("constant", [16] * 5), ("taper", [40, 20, 10, 5, 5]),
                                           ("ramp", [5, 5, 10, 20, 40])])
def test_schedules_of_16_by_5_match_bird_table_6(name, expected):
    assert get("schedule", name)(16, 5, []) == expected


@pytest.mark.parametrize("k,t", [(8, 5), (3, 4), (5, 1), (2, 7)])
def test_taper_and_ramp_keep_the_total_and_are_monotone(k, t):
    taper, ramp = get("schedule", "taper")(k, t, []), get("schedule", "ramp")(k, t, [])
    assert sum(taper) == sum(ramp) == k * t and min(taper + ramp) >= 1
    assert taper == sorted(taper, reverse=True) and ramp == sorted(ramp)


def test_apportion_breaks_ties_toward_earlier_iterations_and_gives_each_at_least_one():
    assert apportion(40, [8, 4, 2, 1, 1]) == [20, 10, 5, 3, 2]
    assert apportion(3, [100, 1, 1]) == [1, 1, 1]


def test_plan_applies_the_budget_caps_to_an_explicit_schedule(compose_cfg):
    cfg = compose_cfg("generate.schedule=explicit", "generate.schedule_values=[10,8,6,5]", "loop.iterations=4",
                      "budget.max_candidates=7", "budget.max_iterations=3")
    plan = make_plan(cfg)
    assert plan.schedule == (7, 7, 6) and plan.iterations == 3 and plan.n_candidates == 7
    assert [plan.candidates_at(i) for i in (1, 2, 3)] == [7, 7, 6]


@pytest.mark.parametrize("overrides,message", [
    (["generate.schedule=explicit", "generate.schedule_values=[3,2]", "loop.iterations=3"], "needs a count for each"),
    (["generate.schedule_values=[3,2]"], "only read by generate.schedule=explicit"),
    (["generate.schedule=explicit", "generate.schedule_values=[3,0]", "loop.iterations=2"], "every iteration needs"),
    (["generate.schedule=fast"], "not a registered schedule"),
    (["budget.max_policy_trainings=0"], "budget.max_policy_trainings=0"),
])
def test_bad_schedules_are_refused_naming_the_key(compose_cfg, overrides, message):
    with pytest.raises(ConfigError, match=message):
        compose_cfg(*overrides)


@pytest.mark.slow
def test_the_search_stops_cleanly_when_policy_trainings_run_out(compose_cfg, tmp_path):
    cfg = compose_cfg("method=eureka", *FAST, "generate.n_candidates=2", "loop.iterations=3",
                      "budget.max_iterations=3", "budget.max_policy_trainings=3")
    result = search(cfg, tmp_path)
    assert result["policy_trainings"] == 3 and "budget.max_policy_trainings=3" in result["stop_reason"]
    assert [it["n_candidates"] for it in result["iterations"]] == [2, 1]  # the second iteration asks for what is left
    trained = [json.loads(p.read_text()) for p in tmp_path.glob("candidates/*/candidate.json")]
    assert sum(r["status"] == "trained" for r in trained) == 3 and result["status"] == "completed"
