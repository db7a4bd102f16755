"""The judged fitness's parts (bird/components/judgement.py) on small hand-made rollouts where each rule and its
breakage give different answers: which states and steps a judge is shown, which reward values (components only),
how an answer is read and scored, and what a judgement records per call (the whole loop, the leak checks and the VLM
replay: test_judged_feedback.py, test_judge_rollout_replay.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bird.components import judge, judgement
from bird.components.judgement import (
    STATE_TEXT_JUDGE,
    ScoreScale,
    _episode_rows,
    _evidence,
    _parse,
    _render_components,
    component_rows,
    judge_candidate,
    render_rollout,
    subtasks_of,
)
from bird.envs.frames import RenderingUnavailable
from bird.envs.registry import make_adapter
from bird.learners.rollouts import save_rollouts
from bird.llm.base import Generator, LLMError, Request, Response
from bird.llm.journal import JournalGenerator
from bird.state import Plan, SearchState
from bird.types import Candidate, TrainResult

ENV = "env=mujoco/inverted_pendulum"
TWO = [{"name": "a", "description": "x", "done_when": "y"}, {"name": "b", "description": "x", "done_when": "y"}]


def _data(lengths=(5, 4)) -> dict[str, np.ndarray]:
    """Episodes of the given lengths; next_obs's hinge angle is the row number / 10 (obs's is its negative), each
    component its own function of the row, and the withheld keys large numbers a judge must never see."""
    n = sum(lengths)
    rows = np.arange(n, dtype=float)
    next_obs = np.zeros((n, 4))
    next_obs[:, 1] = rows / 10
    return {"obs": -next_obs, "next_obs": next_obs, "actions": np.zeros((n, 1)),
            "episode": np.repeat(np.arange(len(lengths)), lengths), "length": np.array(lengths),
            "comp/b": rows * 2 + 0.123456, "comp/a": rows, "comp/reward": rows + 1000, "comp/score": rows + 2000,
            "comp/ref": rows + 3000, "comp/quantity": rows + 4000, "reward": rows + 5000}


def _state(subtasks=TWO, seed=0) -> SearchState:
    state = SearchState(make_adapter(_env()).spec, Plan(1, 2, 10, 10, 1, 1), seed, {})
    state.subtasks = list(subtasks)
    return state


def _env():
    from bird.config.schema import EnvConfig

    return EnvConfig(id="mujoco/inverted_pendulum", description="balance the pole")


def _angles(rows: list[dict]) -> list[tuple[int, float]]:
    return [(r["step"], r["state"]["hinge_angle"]) for r in rows]


# --- what the judge is shown ----------------------------------------------------------------------------------
def test_keyframes_are_evenly_spaced_first_and_last_included_from_next_obs_of_that_episode():
    data, state = _data((10, 4)), _state()
    assert _angles(_episode_rows(state, data, 0, None, 4)) == [(1, 0.0), (4, 0.3), (7, 0.6), (10, 0.9)]
    assert _angles(_episode_rows(state, data, 1, None, 2)) == [(1, 1.0), (4, 1.3)]
    assert _angles(_episode_rows(state, data, 1, None, 1)) == [(1, 1.0)]
    assert _angles(_episode_rows(state, data, 1, None, 9)) == [(1, 1.0), (2, 1.1), (3, 1.2), (4, 1.3)]


def test_a_state_table_takes_every_nth_step_and_the_last():
    data, state = _data((10,)), _state()
    assert [r["step"] for r in _episode_rows(state, data, 0, 4, None)] == [1, 5, 9, 10]
    assert [r["step"] for r in _episode_rows(state, data, 0, 5, None)] == [1, 6, 10]
    assert [r["step"] for r in _episode_rows(state, data, 0, None, None)] == list(range(1, 11))


def test_a_rollout_renders_one_line_per_row_with_named_fields():
    rows = [{"step": 1, "state": {"x": 0.5, "y": [1, 2]}}, {"step": 3, "state": {"x": 1.0}}]
    assert render_rollout(rows) == "  step 1: x=0.5, y=[1, 2]\n  step 3: x=1.0"


def test_component_values_are_read_at_the_steps_shown_and_never_the_withheld_ones():
    data = _data((5, 4))
    rows = component_rows(data, 1, [0, 1, 4, 5])  # episode 1 is rows 5..8; step 0 and step 5 have no transition
    assert rows == [{"step": 1, "a": 5.0, "b": 10.1235}, {"step": 4, "a": 8.0, "b": 16.1235}]
    assert list(rows[0]) == ["step", "a", "b"]


def test_components_are_rendered_per_step_or_said_to_be_missing():
    missing = "The reward function's components were not recorded for this rollout."
    assert _render_components([]) == missing and _render_components([{"step": 1}, {"step": 2}]) == missing
    assert _render_components([{"step": 1, "a": 0.5, "b": 2.0}, {"step": 4, "a": 1.0, "b": 3.0}]) == (
        "The reward function's components at those steps:\n  step 1: a=0.5, b=2.0\n  step 4: a=1.0, b=3.0")


def test_the_subtasks_judged_are_the_list_or_the_whole_task(compose_cfg):
    assert subtasks_of(_state()) == TWO
    assert subtasks_of(_state(subtasks=[])) == [{"name": "task", "description": "balance the pole"}]


def _cfg(compose_cfg, *overrides):
    return compose_cfg("method=rda", ENV, *overrides)


def test_state_text_evidence_shows_the_keyframes_the_components_and_names_the_substitute_once(compose_cfg, tmp_path):
    cfg, state = _cfg(compose_cfg, "feedback.judge_keyframes=3"), _state()
    text, ctx, images = _evidence(cfg, state, _data((5, 4)), 1, tmp_path)
    assert images == [] and ctx["judge_mode"] == "state_text" and ctx["length"] == 4
    assert text.splitlines()[0] == "The rollout lasted 4 steps. The state at 3 keyframes:"
    assert [r["step"] for r in ctx["keyframes"]] == [1, 3, 4] and "state_table" not in ctx
    assert [r["step"] for r in ctx["components"]] == [1, 3, 4] and ctx["components"][0]["a"] == 5.0
    _evidence(cfg, state, _data((5, 4)), 0, tmp_path)
    assert state.substitutes == [STATE_TEXT_JUDGE]


def test_a_state_table_is_added_every_trajectory_stride_steps(compose_cfg, tmp_path):
    cfg = _cfg(compose_cfg, "judge.state_table=true", "feedback.trajectory_stride=2", "feedback.judge_keyframes=2")
    text, ctx, _ = _evidence(cfg, _state(), _data((5,)), 0, tmp_path)
    assert [r["step"] for r in ctx["state_table"]] == [1, 3, 5]
    assert text.splitlines()[-4:] == ["State table, every 2 steps:", *render_rollout(ctx["state_table"]).splitlines()]


def test_a_vlm_judge_without_rendering_falls_back_to_state_text_and_says_so_once(compose_cfg, tmp_path, monkeypatch):
    def unavailable(*args):
        raise RenderingUnavailable("no GL")

    monkeypatch.setattr(judgement, "_keyframe_images", unavailable)
    cfg, state = _cfg(compose_cfg, "judge.mode=vlm"), _state()
    _, ctx, images = _evidence(cfg, state, _data(), 0, tmp_path)
    _evidence(cfg, state, _data(), 1, tmp_path)
    label = "judge=vlm fell back to state_text (vlm requested, rendering unavailable: no GL)"
    assert images == [] and ctx["fallback"] == "vlm requested, rendering unavailable: no GL"
    assert ctx["judge_mode"] == "state_text" and state.substitutes == [label, STATE_TEXT_JUDGE]


def test_a_vlm_judge_is_told_the_steps_its_keyframes_show(compose_cfg, tmp_path, monkeypatch):
    monkeypatch.setattr(judgement, "_keyframe_images", lambda cfg, state, data, ep, folder: ([b"png1", b"png2"], [0, 3]))
    cfg, state = _cfg(compose_cfg, "judge.mode=vlm"), _state()
    text, ctx, images = _evidence(cfg, state, _data(), 1, tmp_path)
    assert images == [b"png1", b"png2"] and (ctx["judge_mode"], ctx["n_frames"]) == ("vlm", 2)
    assert text == "The rollout lasted 4 steps. 2 keyframes of it are attached, in time order, at steps 0, 3."
    assert [r["step"] for r in ctx["components"]] == [3] and state.substitutes == []


# --- reading an answer -------------------------------------------------------------------------------------------
def test_a_scale_divides_by_its_top_and_refuses_values_off_it():
    five = ScoreScale("five", "0 to 5", 5.0)
    assert [five.normalise(v) for v in (0, 5, 2.5, 5.01, -0.01, None, float("inf"))] == [0.0, 1.0, 0.5, None, None,
                                                                                       None, None]
    levels = ScoreScale("levels", "0, 2 or 4", 4.0, (0.0, 2.0, 4.0))
    assert [levels.normalise(v) for v in (2, 4, 3, 1)] == [0.5, 1.0, None, None]


def test_an_answer_gives_each_subtask_its_normalised_score_raw_score_behaviour_and_rationale():
    unit = judgement.get("score_scale", "unit")
    text = json.dumps({"subtasks": [{"name": "a", "score": 0.25, "behaviour": "walks", "rationale": 7},
                                    {"name": "b", "score": 1}]})
    assert _parse(text, TWO, unit) == ([{"score": 0.25, "raw": 0.25, "behaviour": "walks", "rationale": "7"},
                                        {"score": 1.0, "raw": 1, "behaviour": "", "rationale": ""}], None)
    half = ScoreScale("half", "0 to 2", 2.0)
    assert _parse(text, TWO, half)[0][1] == {"score": 0.5, "raw": 1, "behaviour": "", "rationale": ""}


def test_an_unreadable_answer_says_why():
    unit = judgement.get("score_scale", "unit")
    assert _parse(json.dumps({"subtasks": [{"score": 1}]}), TWO, unit) == (None, "expected a list of 2 subtask "
                                                                                "judgements")
    assert _parse(json.dumps({"subtasks": {"a": 1}}), TWO, unit)[1] == "expected a list of 2 subtask judgements"
    assert _parse(json.dumps({"subtasks": [{"score": 1}, {"score": 3}]}), TWO, unit) == (
        None, "subtask 2: score 3 is not on the unit scale")
    assert _parse(json.dumps({"subtasks": [{"score": 1}, "good"]}), TWO, unit) == (
        None, "subtask 2: score 'good' is not on the unit scale")
    from bird.llm.parsing import AnswerParseError, parse_json_answer

    with pytest.raises(AnswerParseError) as err:
        parse_json_answer("no json")
    assert _parse("no json", TWO, unit) == (None, str(err.value)) and str(err.value)


# --- a judgement ---------------------------------------------------------------------------------------------------
class Scripted(Generator):
    """Test double at the LLM boundary: answers requests in order, keeping each."""

    provider = "scripted-test"

    def __init__(self, answers) -> None:
        super().__init__("scripted", 1)
        self.answers, self.requests = list(answers), []

    def complete(self, request: Request) -> Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return Response(answer, self.model)


def _answer(*scores) -> str:
    return json.dumps({"subtasks": [{"name": n, "behaviour": f"b{n}{s}", "rationale": "r", "score": s}
                                    for n, s in zip("ab", scores, strict=True)]})


def _judged(compose_cfg, tmp_path, answers, *overrides, lengths=(5, 4, 3)):
    cfg = _cfg(compose_cfg, *overrides)
    state, scripted = _state(seed=7), Scripted(answers)
    state.judge = JournalGenerator(scripted, None)
    save_rollouts(tmp_path / "r.npz", _data(lengths))
    cand = Candidate("it1-c0", 1, 0, [], code="def compute_reward(obs, action, next_obs, info):\n    return 0.0, {}\n")
    res = TrainResult(cand.id, 0, (), 0, 0.0, rollouts_path=str(tmp_path / "r.npz"))
    return cfg, state, cand, res, scripted


def test_each_rollout_is_judged_repeats_times_and_every_call_is_recorded(compose_cfg, tmp_path):
    answers = [_answer(1, 0.5), _answer(0, 0.5), "not json", _answer(1, 1)]
    cfg, state, cand, res, scripted = _judged(compose_cfg, tmp_path, answers, "judge.rollouts=2", "judge.repeats=2",
                                              "judge.score_scale=unit", "judge.temperature=0.3")
    out = judge_candidate(cfg, state, cand, res)
    assert [(c["rollout"], c["repeat"]) for c in out["calls"]] == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert [r.sample_index for r in scripted.requests] == [0, 1, 100, 101]
    assert [c["error"] is None for c in out["calls"]] == [True, True, False, True]
    assert out["calls"][2]["response"] == "not json" and out["calls"][0]["judge_mode"] == "state_text"
    assert out["calls"][0]["prompt"] == scripted.requests[0].messages_json()
    a, b = out["subtasks"]
    assert (a["name"], b["name"]) == ("a", "b")
    assert [(j["rollout"], j["repeat"], j["score"], j["behaviour"]) for j in a["judgements"]] == [
        (1, 1, 1.0, "ba1"), (1, 2, 0.0, "ba0"), (2, 2, 1.0, "ba1")]
    assert a["score"] == pytest.approx(2 / 3) and b["score"] == pytest.approx(2 / 3)
    assert out["score"] == pytest.approx(2 / 3) and (out["n_calls"], out["n_valid"]) == (4, 3)
    assert out["scale"] == "unit" and out["judge"] == state.judge.describe()
    assert state.judgements[cand.id] is out and state.records[cand.id]["judge_scores.json"] is out


def test_a_judge_request_carries_the_judges_settings_and_what_it_is_shown(compose_cfg, tmp_path):
    cfg, state, cand, res, scripted = _judged(compose_cfg, tmp_path, [_answer(1, 1)], "judge.rollouts=1",
                                              "judge.temperature=0.3", "generate.max_tokens=777",
                                              "feedback.judge_keyframes=2")
    judge_candidate(cfg, state, cand, res)
    [req] = scripted.requests
    assert (req.purpose, req.temperature, req.max_tokens, req.seed) == ("judge_score", 0.3, 777, 7)
    system, user = req.messages
    assert (system.role, system.content) == ("system", judgement.SYSTEM.strip()) and user.role == "user"
    assert "Task: balance the pole\n\nSubtasks, in order:\n1. a: x (done when: y)\n2. b: x (done when: y)" in user.content
    assert "```python\n" + cand.code + "```" in user.content and "step 5: a=4.0" in user.content
    assert "- Score: 1 (success), 0.5 (partial success) or 0 (failure)." in user.content
    assert req.context["task"] == "balance the pole" and req.context["subtasks"] == TWO
    assert (req.context["scale"], req.context["code"]) == ("three_point", cand.code)
    assert req.context["rollout"]["length"] == 5 and [r["step"] for r in req.context["rollout"]["keyframes"]] == [1, 5]


def test_a_prompt_set_may_bring_its_own_judge_wording(compose_cfg, tmp_path, monkeypatch):
    monkeypatch.setattr(judgement, "templates", lambda name: {"score_system": " own system \n",
                                                              "score_user": "judge {task} on {scale}"})
    cfg, state, cand, res, scripted = _judged(compose_cfg, tmp_path, [_answer(1, 1)], "judge.rollouts=1")
    judge_candidate(cfg, state, cand, res)
    system, user = scripted.requests[0].messages
    assert (system.content, user.content) == ("own system", "judge balance the pole on 1 (success), 0.5 (partial "
                                                            "success) or 0 (failure)")


def test_no_more_rollouts_are_judged_than_were_collected(compose_cfg, tmp_path):
    cfg, state, cand, res, scripted = _judged(compose_cfg, tmp_path, [_answer(1, 1)] * 2, "judge.rollouts=5",
                                              lengths=(5, 4))
    assert judge_candidate(cfg, state, cand, res)["n_calls"] == 2


def test_a_failed_call_is_recorded_with_its_error_and_no_answer(compose_cfg, tmp_path):
    cfg, state, cand, res, _ = _judged(compose_cfg, tmp_path, [LLMError("judge down"), _answer(0.5, 1)],
                                       "judge.rollouts=2")
    out = judge_candidate(cfg, state, cand, res)
    first = out["calls"][0]
    assert first["error"].startswith("judge request failed: ") and "judge down" in first["error"]
    assert first["response"] is None and out["calls"][1]["response"] == _answer(0.5, 1)
    assert out["score"] == pytest.approx(0.75) and out["n_valid"] == 1


def test_without_rollouts_there_is_no_judgement(compose_cfg, tmp_path):
    cfg, state, cand, res, scripted = _judged(compose_cfg, tmp_path, [])
    from dataclasses import replace

    out = judge_candidate(cfg, state, cand, replace(res, rollouts_path=None))
    assert out == {"score": None, "error": "no rollouts were collected", "subtasks": [], "calls": []}
    assert scripted.requests == [] and cand.id not in state.judgements


# --- a VLM judge's keyframes ---------------------------------------------------------------------------------------
def _replayed(compose_cfg, tmp_path, monkeypatch, keyframes: int, ep: int, frames: int):
    """_keyframe_images with the replay stood in for: what render_episode was asked and the files saved."""
    from bird.learners.rollouts import ROLLOUT_SEED_BASE

    asked = {}

    def render_episode(adapter, seed, policy, max_steps, every, width, height):
        asked.update(seed=seed - ROLLOUT_SEED_BASE, max_steps=max_steps, every=every, size=(width, height),
                     actions=[float(policy(None)[0]) for _ in range(max_steps)])
        return [np.full((4, 4, 3), k, dtype=np.uint8) for k in range(frames)]

    monkeypatch.setattr(judge, "render_episode", render_episode)
    cfg = _cfg(compose_cfg, "judge.mode=vlm", f"feedback.judge_keyframes={keyframes}")
    data = _data((5, 6))
    data["actions"] = np.arange(11, dtype=float)[:, None]
    images, steps = judgement._keyframe_images(cfg, _state(seed=3), data, ep, tmp_path)
    return asked, images, steps, sorted(p.name for p in (tmp_path / "keyframes").glob("*.png"))


def test_keyframes_are_replayed_from_the_rollouts_reset_with_its_actions(compose_cfg, tmp_path, monkeypatch):
    asked, images, steps, saved = _replayed(compose_cfg, tmp_path, monkeypatch, keyframes=3, ep=1, frames=5)
    assert asked == {"seed": 3001, "max_steps": 6, "every": 3, "size": (224, 224),
                     "actions": [5.0, 6.0, 7.0, 8.0, 9.0, 10.0]}
    assert steps == [0, 3, 6] and len(images) == 3 and images[0].startswith(b"\x89PNG")
    assert saved == ["03_rollout1_step0000.png", "04_rollout1_step0003.png", "05_rollout1_step0006.png"]


def test_a_short_rollout_is_rendered_every_step_and_one_keyframe_every_len_steps(compose_cfg, tmp_path, monkeypatch):
    asked, _, steps, _ = _replayed(compose_cfg, tmp_path, monkeypatch, keyframes=8, ep=0, frames=5)
    assert asked["every"] == 1 and steps == [0, 1, 2, 3, 4]
    asked, _, steps, saved = _replayed(compose_cfg, tmp_path, monkeypatch, keyframes=1, ep=1, frames=2)
    assert asked["every"] == 6 and steps == [0] and "01_rollout1_step0000.png" in saved


def test_a_vlm_judge_request_carries_the_keyframes_as_images_of_the_user_message(compose_cfg, tmp_path, monkeypatch):
    monkeypatch.setattr(judgement, "_keyframe_images", lambda cfg, state, data, ep, folder: ([b"png1", b"png2"], [0, 3]))
    cfg, state, cand, res, scripted = _judged(compose_cfg, tmp_path, [_answer(1, 1)], "judge.rollouts=1",
                                              "judge.mode=vlm")
    out = judge_candidate(cfg, state, cand, res)
    system, user = scripted.requests[0].messages
    assert user.images == (b"png1", b"png2") and system.images == () and out["calls"][0]["judge_mode"] == "vlm"


def test_a_judge_that_loses_an_answer_is_an_error_not_a_smaller_judgement(compose_cfg, tmp_path):
    class Losing(Scripted):
        def complete_many(self, requests):
            return super().complete_many(requests)[:-1]

    cfg, state, cand, res, _ = _judged(compose_cfg, tmp_path, [], "judge.rollouts=2")
    state.judge = Losing([_answer(1, 1)] * 2)
    with pytest.raises(ValueError, match="zip"):
        judge_candidate(cfg, state, cand, res)
