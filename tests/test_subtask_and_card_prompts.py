"""Prompt fixes of BIRD's recipes and CARD: the subtask ask states its count in a sentence (the generator's about 5 to 10,
or a pinned number), `done_when` is optional and the asks advise against numeric thresholds the task does not state
(as the release's decomposition prompt), and CARD's system prompt speaks of a robot arm only on Meta-World."""

import json

import pytest

from bird.components import judgement
from bird.components.subtasks import _clean, render_subtasks, subtask_problems
from bird.envs.registry import make_adapter
from bird.llm.base import Generator, Request, Response
from bird.llm.journal import JournalGenerator
from bird.registry import get
from bird.stages.generate import build_request
from bird.state import Plan, SearchState
from bird.types import Candidate

ENV = "env=mujoco/inverted_pendulum"
THRESHOLDS = "Avoid numeric thresholds unless the task states them."


class Scripted(Generator):
    """Test double at the LLM boundary: answers requests in order from a list."""

    provider = "scripted-test"

    def __init__(self, answers: list[str]) -> None:
        super().__init__("scripted", 1)
        self.answers = list(answers)

    def complete(self, request: Request) -> Response:
        return Response(self.answers.pop(0), self.model)


def _state(cfg) -> SearchState:
    return SearchState(make_adapter(cfg.env).spec, Plan(1, 2, 10, 10, 1, 1), 0, {})


def _decompose(cfg) -> dict:
    answer = json.dumps({"subtasks": [{"name": "balance", "description": "keep the pole up"}]})
    return get("decompose", "subtask_list")(cfg, _state(cfg), JournalGenerator(Scripted([answer]), None))


@pytest.mark.parametrize(("overrides", "count"), [
    ([], "Use the fewest subtasks the task needs: about 5 for a simple task, about 10 for a complex or long-horizon "
         "one."),
    (["decompose.n_subtasks=3"], "Use exactly 3 subtasks."),
])
def test_the_subtask_ask_states_its_count_in_a_sentence_of_its_own(compose_cfg, overrides, count):
    record = _decompose(compose_cfg("method=rda", ENV, *overrides))
    user = record["prompt"][1]["content"]
    assert (f"Break the task into ordered, high-level subtasks that describe the main stages of achieving it. {count} "
            "Each subtask is a distinct, measurable phase of progress") in user
    assert "into as few as" not in user and "into 3 ordered" not in user


def test_a_subtask_list_without_done_when_is_valid_and_kept_as_given(compose_cfg):
    record = _decompose(compose_cfg("method=rda", ENV))
    assert record["valid"] and record["subtasks"] == [{"name": "balance", "description": "keep the pole up"}]


def test_done_when_is_optional_and_listed_only_where_given():
    answer = {"subtasks": [{"name": "reach", "description": "bring the hand to the puck"},
                           {"name": "push", "description": "push the puck", "done_when": "the puck is at the goal"},
                           {"name": "hold", "description": "keep it there", "done_when": "  "}]}
    assert subtask_problems(answer) == []
    clean = _clean(answer)
    assert [sorted(s) for s in clean] == [["description", "name"], ["description", "done_when", "name"],
                                          ["description", "name"]]
    assert render_subtasks(clean) == ("1. reach: bring the hand to the puck\n"
                                      "2. push: push the puck (done when: the puck is at the goal)\n"
                                      "3. hold: keep it there")
    assert subtask_problems({"subtasks": [{"name": "a", "description": "d", "done_when": 3}]}) != []
    assert subtask_problems({"subtasks": [{"name": "a", "done_when": "w"}]}) != []  # the description is required


def test_the_subtask_asks_advise_against_thresholds_the_task_does_not_state(compose_cfg, tmp_path):
    from bird.components.subtasks import REVISE

    user = _decompose(compose_cfg("method=rda", ENV))["prompt"][1]["content"]
    assert THRESHOLDS in user and THRESHOLDS in REVISE
    assert '"done_when": str (optional)' in user and '"done_when": str (optional)' in REVISE
    assert "a condition on the observation fields that says the subtask is done" not in user


def test_the_judge_lists_a_subtask_without_done_when(compose_cfg):
    cfg = compose_cfg("method=rda", ENV)
    state = _state(cfg)
    cand = Candidate(id="it1-c0", iteration=1, index=0, messages=[], code="def compute_reward(obs):\n    return 1\n")
    subtasks = [{"name": "balance", "description": "keep the pole up"},
                {"name": "stay", "description": "stay centred", "done_when": "the cart is near 0"}]
    req = judgement._request(cfg, state, cand, 0, 0, subtasks, get("score_scale", "unit"),
                             ("evidence", {"components": []}, []))
    user = req.messages[1].content
    assert "1. balance: keep the pole up\n2. stay: stay centred (done when: the cart is near 0)\n" in user
    whole = judgement.subtasks_of(state)  # no list: the whole task is the one subtask
    assert whole == [{"name": "task", "description": state.spec.description}]


@pytest.mark.parametrize(("env", "arm"), [("mujoco/hopper", False), ("mujoco/half_cheetah", False),
                                          ("metaworld/push", True)])
def test_cards_system_prompt_names_a_robot_arm_only_on_meta_world(compose_cfg, env, arm):
    cfg = compose_cfg("method=card", f"env={env}")
    state = _state(cfg)
    system = build_request(cfg, state, 0).messages[0].content
    assert ("We are going to use a robot arm" in system) == arm
    assert ("gripper" in system) == arm  # the manipulation reward template is Meta-World's
    assert str(state.spec.action_dim) in system and "{" not in system.split("```")[0]
