"""Design thoughts: stated in braces, shown as the parent's thought, re-described after training (BIRD choice (3))."""

import json

import pytest

from bird.components.thought import align_thoughts, current_thought, extract_braced, record_thoughts
from bird.config.load import ConfigError
from bird.envs.registry import make_adapter
from bird.llm.base import Generator, LLMError, Request, Response
from bird.llm.journal import JournalGenerator
from bird.llm.offline import OfflineSynthesiser
from bird.reward.contracts import Contract
from bird.stages.feedback import feedback
from bird.stages.generate import build_request
from bird.state import Plan, SearchState
from bird.types import Candidate, Checkpoint, TrainResult

CODE = ("import numpy as np\n\ndef compute_reward(obs, action, next_obs, info):\n"
        "    up = np.exp(-next_obs['hinge_angle'] ** 2)\n    return up, {'upright': up, 'alive': up * 0 + 1}\n")
THOUGHT = "{Reward staying upright with an exp-shaped angle term.}"


def _state(cfg, judge=None):
    """A state after one iteration: candidate it1-c0 trained, reported, and is the parent."""
    state = SearchState(make_adapter(cfg.env).spec, Plan(1, 2, 10, 10, 1, 1), 0, {})
    state.iteration, state.judge = 2, judge or JournalGenerator(OfflineSynthesiser("offline"), None)
    cand = Candidate("it1-c0", 1, 0, [], response=f"{THOUGHT}\n```python\n{CODE}```", code=CODE)
    state.candidates[cand.id] = cand
    curve = (Checkpoint(1000, 0.5, 0.0, 5.0, 7.0, 10.0, {"upright": 0.4}),)
    state.results[cand.id] = TrainResult(cand.id, 0, curve, 1000, 1.0)
    state.reports.update(feedback(cfg, state, [cand], state.results))
    state.iteration_best = state.global_best = cand.id
    return state, cand


def _last_user(request) -> str:
    return [m for m in request.messages if m.role == "user"][-1].content


def test_extract_braced_reads_the_thought_outside_code_only():
    assert extract_braced("{ idea one }\n```python\nx = {'a': 1}\n```") == "idea one"
    assert extract_braced("no thought\n```python\nd = {'a': 1}\n```\nstill none") is None
    assert extract_braced("{}\n```python\nx = 1\n```") is None
    assert extract_braced("```python\nx = {1}\n```\n{late idea}") == "late idea"


@pytest.mark.parametrize("text, thought", [
    ("{A sum of {forward} speed and an alive bonus}\n```python\nx = 1\n```", "A sum of {forward} speed and an alive bonus"),
    ("The term r_{t} and \\frac{a}{b} are maths. {Reward forward speed, penalise torque}", "Reward forward speed, penalise torque"),
    ("Use `d = {'a': 1}` here.\n{{Reward the height, with a bonus}}", "Reward the height, with a bonus"),
    ('Weights {"forward": 1.0, "ctrl": 0.1}\n{Forward speed dominates the reward}', "Forward speed dominates the reward"),
    ("~~~python\nr = {'x': 1}\n~~~\n{Distance shaping toward the goal}", "Distance shaping toward the goal"),
    ("```python\nx = {1,\n```\n{ unclosed and never", None),
    ("No braces at all.", None),
])
def test_extract_braced_reads_the_thought_as_models_write_it(text, thought):
    assert extract_braced(text) == thought


def test_the_prompt_asks_for_a_thought_only_when_design_thought_is_on(compose_cfg):
    off = compose_cfg("env=mujoco/inverted_pendulum")
    on = compose_cfg("env=mujoco/inverted_pendulum", "generate.design_thought=inline_brace")
    req_off, req_on = build_request(off, _state(off)[0], 0), build_request(on, _state(on)[0], 0)
    assert "inside braces" not in _last_user(req_off) and "design_thought" not in req_off.context
    assert "inside braces" in _last_user(req_on) and req_on.context["design_thought"] == "inline_brace"


@pytest.mark.parametrize("aligned,shown", [("aligned idea", "aligned idea"), (None, "stated idea")])
def test_the_parent_thought_shown_is_the_aligned_one_when_there_is_one(compose_cfg, aligned, shown):
    cfg = compose_cfg("env=mujoco/inverted_pendulum", "+choice=thought_parent_alignment")
    state, cand = _state(cfg)
    state.thoughts[cand.id] = {"stated": "stated idea", "aligned": aligned}
    request = build_request(cfg, state, 0)
    assert shown in _last_user(request) and request.context["parent_thought"] == shown
    assert (("stated idea" in _last_user(request)) == (aligned is None))
    hidden = build_request(compose_cfg("env=mujoco/inverted_pendulum", "generate.design_thought=inline_brace"), state, 0)
    assert shown not in _last_user(hidden) and "parent_thought" not in hidden.context


@pytest.mark.parametrize("flag", ["generate.parent_thought=true", "feedback.thought_alignment=true"])
def test_thought_flags_without_a_design_thought_are_refused(compose_cfg, flag):
    with pytest.raises(ConfigError, match=f"{flag.split('=')[0]}=True needs generate.design_thought"):
        compose_cfg(flag)


def test_offline_answer_states_a_thought_that_describes_its_own_terms(compose_cfg):
    cfg = compose_cfg("env=mujoco/inverted_pendulum", "generate.design_thought=inline_brace")
    state, _ = _state(cfg)
    state.iteration = 1
    request = build_request(cfg, state, 0)
    text = OfflineSynthesiser("offline").complete(request).text
    thought = extract_braced(text)
    code = Contract("compute_reward", "compute_reward").extract(text).code
    assert thought is not None and thought.startswith("A weighted sum of") and code is not None
    names = [n for n in ("upright", "alive", "action_cost", "smoothness") if f"'{n}'" in code]
    assert names and all(n in thought for n in names)


class _Failing(Generator):
    provider = "failing-test"

    def complete(self, request: Request) -> Response:
        raise LLMError("judge down")


def test_alignment_replaces_the_shown_thought_and_records_the_exchange(compose_cfg):
    cfg = compose_cfg("env=mujoco/inverted_pendulum", "+choice=thought_parent_alignment")
    state, cand = _state(cfg, JournalGenerator(OfflineSynthesiser("offline"), None))
    record_thoughts(cfg, state, [cand])
    assert current_thought(state, cand.id) == THOUGHT.strip("{}")
    align_thoughts(cfg, state, [cand], state.reports)
    aligned = state.thoughts[cand.id]["aligned"]
    assert aligned and "upright" in aligned and "alive" in aligned and current_thought(state, cand.id) == aligned
    record = state.records[cand.id]["thought.json"]
    assert record["error"] is None and CODE in record["prompt"][1]["content"] and THOUGHT.strip("{}") in record["prompt"][1]["content"]
    json.dumps(record)  # plain data


def test_a_failed_alignment_keeps_the_stated_thought(compose_cfg):
    cfg = compose_cfg("env=mujoco/inverted_pendulum", "+choice=thought_parent_alignment")
    state, cand = _state(cfg, JournalGenerator(_Failing("x"), None))
    record_thoughts(cfg, state, [cand])
    align_thoughts(cfg, state, [cand], state.reports)
    assert state.records[cand.id]["thought.json"]["error"] == "judge down"
    assert current_thought(state, cand.id) == THOUGHT.strip("{}")


@pytest.mark.slow
def test_thought_choice_runs_end_to_end_and_the_aligned_thought_reaches_the_child(smoke_run):
    run, result = smoke_run("method=eureka", "env=mujoco/inverted_pendulum", "budget.max_iterations=2",
                            "budget.max_candidates=1", "env.horizon=100", "budget.env_steps=512",
                            "budget.final_env_steps=512", "+choice=thought_parent_alignment")
    assert result["status"] == "completed"
    parent_record = json.loads((run / "candidates" / "it1-c0" / "thought.json").read_text())
    assert parent_record["stated"].startswith("A weighted sum of") and parent_record["aligned"]
    child = json.loads((run / "candidates" / "it2-c0" / "prompt.json").read_text())
    best = json.loads((run / "candidates" / "it2-c0" / "candidate.json").read_text())["parent_id"]
    shown = json.loads((run / "candidates" / best / "thought.json").read_text())["aligned"]
    assert shown in child[-1]["content"] and "inside braces" in child[-1]["content"]
