"""No leaks: prompts and request contexts never carry the reference reward, success, or an unshown score."""

import json

import pytest

from bird.envs.registry import make_adapter
from bird.stages.feedback import feedback
from bird.stages.generate import build_request
from bird.state import Plan, SearchState
from bird.types import Candidate, Checkpoint, TrainResult

LEAKS = ("_get_rew", "healthy_reward", "ctrl_cost", "forward_reward_weight", "reward_forward", "is_success",
         "reference_return", "reference_reward")


def _state(cfg):
    adapter = make_adapter(cfg.env)
    state = SearchState(adapter.spec, Plan(1, 2, 10, 10, 1, 1), 0, {})
    state.iteration = 2
    cand = Candidate("it1-c0", 1, 0, [], response="```python\nprint()\n```", code="x = 1\n")
    state.candidates[cand.id] = cand
    curve = tuple(Checkpoint(1000 * i, score, 0.0, 5.0, 777.77, 10.0, {"a": float(i)})
                  for i, score in enumerate([0.123456, 0.654321], start=1))
    results = {cand.id: TrainResult(cand.id, 0, curve, 2000, 1.0)}
    state.results.update(results)
    state.reports.update(feedback(cfg, state, [cand], results))
    state.iteration_best = state.global_best = cand.id
    return state


@pytest.mark.parametrize("env", ["mujoco/hopper", "mujoco/reacher", "mujoco/half_cheetah"])
@pytest.mark.parametrize("method", ["eureka", "zeroshot"])
def test_requests_never_contain_reference_reward_or_success(compose_cfg, env, method):
    cfg = compose_cfg(f"method={method}", f"env={env}")
    request = build_request(cfg, _state(cfg), 0)
    blob = json.dumps(request.messages_json()) + json.dumps(request.context)
    for leak in LEAKS:
        assert leak not in blob, leak


def test_score_reaches_the_generator_only_when_the_method_shows_it(compose_cfg):
    shown = build_request(compose_cfg("method=eureka"), _state(compose_cfg("method=eureka")), 0)
    assert "task_score" in shown.context["feedback"]
    cfg = compose_cfg("method=eureka", "feedback.show_score=false")
    hidden = build_request(cfg, _state(cfg), 0)
    blob = json.dumps(hidden.messages_json()) + json.dumps(hidden.context)
    assert "task_score" not in blob and "0.65" not in blob and "0.12" not in blob
    assert "777.77" not in json.dumps(shown.messages_json()) + json.dumps(shown.context)  # reference return
