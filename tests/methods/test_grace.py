"""GRACE as its paper says: goal-state identification (P0.1) labels the expert states, a random subset of D+ per
initial prompt, the train/test split of §5.1, P0.3's requirement bullets, and what budget=matched caps."""

import json

import numpy as np
import pytest

from bird.components.demos import load_demo_set
from bird.components.goal_states import read_goal_indexes
from bird.envs.registry import make_adapter
from bird.llm.base import Generator, Request, Response
from bird.loop import make_plan

GRACE = ["method=grace", "env=metaworld/reach"]


@pytest.mark.parametrize("text,goals", [
    ('{"reasoning": "x", "goal_state_indexes": [3, 5, 5]}', [2, 4]),
    ('```json\n{"reasoning": "x", "goal_state_indexes": -1}\n```', []),
    ('{"goal_state_indexes": [-1]}', []),
    ('{"goal_state_indexes": [0, 3]}', None),     # 1-based: 0 is outside
    ('{"goal_state_indexes": [3, 11]}', None),    # past the last state
    ('{"goal_state_indexes": [true]}', None),
    ('{"goal_state_indexes": "3"}', None),
    ("the goal is state 3", None),
])
def test_goal_indexes_are_read_1_based_and_invalid_answers_are_refused(text, goals):
    assert read_goal_indexes(text, n_states=10)[0] == goals


class _Goals(Generator):
    """Test double at the LLM boundary: answers expert trajectory k with ANSWERS[k]."""

    ANSWERS = ['{"reasoning": "r", "goal_state_indexes": [3, 5]}', '{"reasoning": "r", "goal_state_indexes": -1}',
               "no idea"]

    def complete(self, request: Request) -> Response:
        assert request.purpose == "goal_states" and "state 1:" in request.messages[1].content
        return Response(self.ANSWERS[request.sample_index], "goals")


def test_identified_goal_states_are_the_positives_and_the_other_expert_states_negatives(compose_cfg):
    cfg = compose_cfg(*GRACE, "demos.n_expert=3", "demos.n_negative=2", "demos.max_train=10")
    spec = make_adapter(cfg.env).spec
    demos = load_demo_set(cfg, spec, _Goals("goals"))
    eps, t = demos.train, int((demos.train.episode == 0).sum())
    label = {e: eps.label[(eps.episode == e)] for e in range(3)}
    assert np.flatnonzero(label[0] > 0).tolist() == [2, 4] and (np.delete(label[0], [2, 4]) == -1).all()
    assert (label[1] == -1).all()  # "-1": no goal state in this trajectory
    assert np.flatnonzero(label[2] > 0).tolist() == [t - 1]  # unreadable answer: the last state, recorded
    records = demos.meta["goal_states"]
    assert [r["goal_steps"] for r in records] == [[3, 5], [], [t]] and records[2]["how"].startswith("fallback")
    assert (eps.label[np.isin(eps.episode, [3, 4])] == -1).all()  # the negatives


def test_train_split_holds_up_to_max_train_trajectories_half_expert_and_the_rest_is_test(compose_cfg):
    cfg = compose_cfg(*GRACE, "demos.n_expert=4", "demos.n_negative=4", "demos.max_train=4",
                      "demos.positive_states=last_state")
    demos = load_demo_set(cfg, make_adapter(cfg.env).spec)
    assert demos.train.source == ["expert", "expert", "random", "random"]
    assert demos.test is not None and demos.test.source == ["expert", "expert", "random", "random"]
    assert json.dumps(demos.describe()["test"]) == json.dumps({"episodes": 4, "positive_states": 2,
                                                              "negative_states": 4 * 500 - 2, "dropped_states": 0})


def test_grace_config_follows_the_paper(compose_cfg):
    cfg = compose_cfg(*GRACE, "budget=paper")
    assert cfg.demos.positive_states == "last_if_terminal" and cfg.demos.max_train == 16
    assert (cfg.demos.n_expert, cfg.demos.n_negative) == (16, 16) and cfg.generate.field_view == "bare"
    plan = make_plan(cfg)
    assert (plan.n_candidates, plan.iterations, plan.population_size, plan.capped) == (20, 101, 20, {})


def test_matched_budget_caps_grace_and_the_plan_says_so(compose_cfg):
    plan = make_plan(compose_cfg(*GRACE, "budget=matched"))
    assert (plan.n_candidates, plan.iterations, plan.population_size) == (8, 5, 8)
    assert plan.capped == {"n_candidates": [20, 8], "iterations": [101, 5], "population_size": [20, 8]}


def test_matched_budget_runs_card_as_bird_ran_it(compose_cfg):
    matched = make_plan(compose_cfg("method=card", "env=metaworld/reach", "budget=matched"))
    own = make_plan(compose_cfg("method=card", "env=metaworld/reach", "budget=paper"))
    assert (matched.n_candidates, matched.iterations, matched.capped) == (1, 5, {})  # 4 trainings: the last is not
    assert (own.n_candidates, own.iterations) == (1, 3)


@pytest.mark.slow
def test_grace_prompts_draw_a_random_subset_of_experts_and_keep_p03_requirements(compose_cfg, rehearse_prompts,
                                                                                  tmp_path):
    cfg = compose_cfg(*GRACE, "env.horizon=50", "budget.max_candidates=4", "demos.n_expert=6", "demos.n_negative=2",
                      "demos.max_train=8", "demos.n_shown=1", "verify.checks=[static]", "run.progress=false")
    r = rehearse_prompts(cfg, tmp_path)
    initial = [req for req, _ in r.calls if req.purpose == "reward"]
    shown = [req.context["expert_trajectories"][0]["episode"] for req in initial]
    assert len(initial) == 4 and len(set(shown)) > 1, shown  # a random expert per prompt, not always the first
    assert all(any(row.get("mark") == "goal" for row in req.context["expert_trajectories"][0]["rows"])
               for req in initial)  # identified goal states are marked
    goal_calls = [req for req, _ in r.calls if req.purpose == "goal_states"]
    assert len(goal_calls) == 6  # one P0.1 call per expert trajectory
    mutation = [req.messages[1].content for req, _ in r.calls if req.purpose == "mutation"]
    for bullet in ("Write self-contained Python 3.9 code", "Aim to give high rewards for expert states",
                   "generic enough to handle variations", "Design for modularity"):
        assert mutation and all(bullet in m for m in mutation), bullet
