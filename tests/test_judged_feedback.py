"""Judge scores per subtask, summarised feedback, the co-evolved subtask list, the rebuilt prompt and the incumbent
gate: what RDA, ERA-U and ERA-S are made of. The no-leak test is counterfactual: two searches that differ only in the
hidden signals (benchmark scores, reference returns, the episode scores stored with rollouts), which favour the other
candidate in each, must send identical requests to every LLM role and select identically; its positive controls leak
on purpose and must be caught."""

import json
from dataclasses import replace

import numpy as np
import pytest

from bird.components.judgement import STATE_TEXT_JUDGE, judge_candidate
from bird.components.subtasks import co_evolve_subtasks, subtask_problems
from bird.envs.registry import make_adapter
from bird.learners.rollouts import save_rollouts
from bird.llm.base import Generator, LLMError, Request, Response
from bird.llm.journal import JournalGenerator
from bird.llm.offline import OfflineSynthesiser
from bird.registry import get
from bird.stages.feedback import feedback
from bird.stages.generate import build_request
from bird.stages.select import select
from bird.state import Plan, SearchState
from bird.types import Candidate, Checkpoint, TrainResult

ENV = "env=mujoco/inverted_pendulum"
CODE = ("import numpy as np\n\nREWARD_WEIGHTS = {{'upright': 1.0, 'alive': {w}}}\n\n\n"
        "def compute_reward(obs, action, next_obs, info):\n    upright = -next_obs['hinge_angle'] ** 2\n"
        "    return {{'upright': upright, 'alive': upright * 0 + 1.0}}\n")


class Recording(Generator):
    """Test double around the offline synthesiser: keeps every request it answers."""

    provider = "recording-test"

    def __init__(self) -> None:
        super().__init__("offline", 1)
        self.inner = OfflineSynthesiser("offline")
        self.seen: list[tuple[str, str, str]] = []

    def complete(self, request: Request) -> Response:
        self.seen.append((request.purpose, json.dumps(request.messages_json()), json.dumps(request.context, default=str)))
        return self.inner.complete(request)


def _rollouts(path, angles: list[float], hidden: float) -> str:
    """Two 30-step episodes whose hinge angle ramps to `angles[e]`; `hidden` fills the stored episode scores."""
    rows = []
    for e, end in enumerate(angles):
        ang = np.linspace(0.0, end, 30)
        obs = np.zeros((30, 4))
        obs[:, 1] = ang
        rows.append((obs, e))
    obs = np.concatenate([o for o, _ in rows])
    data = {"obs": obs, "actions": np.zeros((60, 1)), "next_obs": obs, "episode": np.repeat([0, 1], 30),
            "reward": -obs[:, 1] ** 2 + 1.0, "comp/upright": -obs[:, 1] ** 2, "comp/alive": np.ones(60),
            "score": np.array([hidden, hidden / 2]), "quantity": np.array([hidden * 7, hidden]), "length": np.array([30, 30])}
    save_rollouts(path, data)
    return str(path)


def _searched(cfg, tmp_path, hidden: tuple[float, float], recorder: Recording):
    """Iteration 1 of a search with two trained candidates, judged, summarised and selected; then the next prompt.
    `hidden[i]` sets candidate i's benchmark scores, reference returns and stored episode scores."""
    spec = make_adapter(cfg.env).spec
    state = SearchState(spec, Plan(2, 2, 10, 10, 1, 1), 0, {})
    state.iteration, state.judge = 1, JournalGenerator(recorder, None)
    state.subtasks = [{"name": "stay upright", "description": "keep the pole up", "done_when": "abs(hinge_angle) < 0.2"}]
    cands, results = [], {}
    for i, (w, angles) in enumerate([(0.5, [0.05, 0.1]), (0.2, [0.5, 0.6])]):
        cand = Candidate(f"it1-c{i}", 1, i, [], response="{an idea}\n```python\n" + CODE.format(w=w) + "```",
                         code=CODE.format(w=w))
        state.candidates[cand.id] = cand
        state.thoughts[cand.id] = {"stated": f"idea {i}", "aligned": None}
        h = hidden[i]
        curve = tuple(Checkpoint(100 * k, h * (k + 1), h * 7, 3.0, 100 * h, 30.0, {"upright": -0.1}) for k in range(2))
        path = _rollouts(tmp_path / f"{cand.id}-{h}.npz", angles, h)
        results[cand.id] = TrainResult(cand.id, 0, curve, 200, 1.0, rollouts_path=path)
        cands.append(cand)
    state.results.update(results)
    reports = feedback(cfg, state, cands, results)
    state.reports.update(reports)
    select(cfg, state, cands, reports)
    co_evolve_subtasks(cfg, state, JournalGenerator(recorder, None), tmp_path)
    state.iteration = 2
    recorder.seen.append(("next_prompt", json.dumps(build_request(cfg, state, 0).messages_json()), ""))
    return state, reports


def _counterfactual(compose_cfg, tmp_path, *overrides):
    """(requests, fitness, selection) of two searches differing only in the hidden signals: the first world's signals favour
    it1-c1, the second's it1-c0, so a search that ranks or prompts on any of them differs between the two."""
    out = []
    for hidden in ((0.123457, 0.876543), (0.912345, 0.054321)):
        cfg = compose_cfg("method=era_u", ENV, *overrides)
        rec = Recording()
        state, reports = _searched(cfg, tmp_path, hidden, rec)
        out.append((rec.seen, {k: r.fitness for k, r in reports.items()}, (state.iteration_best, state.returned)))
    return out


def test_era_u_prompts_and_selection_never_depend_on_the_benchmark_score_or_reference_reward(compose_cfg, tmp_path):
    (seen_a, fit_a, sel_a), (seen_b, fit_b, sel_b) = _counterfactual(compose_cfg, tmp_path)
    purposes = {p for p, _, _ in seen_a}
    assert {"judge_score", "summary", "thought_alignment", "subtask_revision", "next_prompt"} <= purposes
    assert seen_a == seen_b and fit_a == fit_b and sel_a == sel_b
    assert all(v is not None for v in fit_a.values()) and sel_a[0] == "it1-c0"  # the upright policy is judged better


def test_the_counterfactual_catches_a_score_shown_to_the_generator(compose_cfg, tmp_path):
    (seen_a, _, _), (seen_b, _, _) = _counterfactual(compose_cfg, tmp_path, "feedback.show_score=true")
    assert seen_a != seen_b  # positive control: the subtask_judge format shows task_score when told to


@pytest.mark.parametrize("fitness", ["native", "benchmark_score"])
def test_the_counterfactual_catches_ranking_on_a_hidden_signal(compose_cfg, tmp_path, fitness):
    (_, fit_a, sel_a), (_, fit_b, sel_b) = _counterfactual(compose_cfg, tmp_path, f"feedback.fitness={fitness}")
    assert fit_a != fit_b and sel_a != sel_b  # positive control: ERA-S ranks on the reference return on MuJoCo


@pytest.mark.parametrize("scale,value,expected", [("three_point", 1, 1.0), ("three_point", 0.5, 0.5), ("three_point", 0, 0.0),
                                                  ("three_point", 0.75, None), ("three_point", 2, None),
                                                  ("unit", 0.25, 0.25), ("unit", 1.2, None),
                                                  ("unit", True, None), ("unit", "0.5", None), ("unit", float("nan"), None)])
def test_score_scales_normalise_to_unit_or_refuse(scale, value, expected):
    assert get("score_scale", scale).normalise(value) == expected


class Scripted(Generator):
    """Test double at the LLM boundary: answers requests in order from a list (LLMError for an exception)."""

    provider = "scripted-test"

    def __init__(self, answers):
        super().__init__("scripted", 1)
        self.answers = list(answers)

    def complete(self, request: Request) -> Response:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer if isinstance(answer, Response) else Response(answer, self.model)


def _judged_state(compose_cfg, tmp_path, answers, *overrides):
    cfg = compose_cfg("method=rda", ENV, "judge.rollouts=2", *overrides)
    state = SearchState(make_adapter(cfg.env).spec, Plan(1, 2, 10, 10, 1, 1), 0, {})
    state.judge = JournalGenerator(Scripted(answers), None)
    state.subtasks = [{"name": "a", "description": "x", "done_when": "y"}, {"name": "b", "description": "x", "done_when": "y"}]
    cand = Candidate("it1-c0", 1, 0, [], code=CODE.format(w=1.0))
    res = TrainResult(cand.id, 0, (), 0, 0.0, rollouts_path=_rollouts(tmp_path / "r.npz", [0.1, 0.2], 0.5))
    return cfg, state, cand, res


def _answer(*scores):
    return json.dumps({"subtasks": [{"name": n, "behaviour": f"b{n}", "rationale": "r", "score": s}
                                    for n, s in zip("ab", scores, strict=True)]})


def test_judge_score_averages_valid_calls_over_rollouts_and_subtasks(compose_cfg, tmp_path):
    # rollout 1: a=1, b=0 (three-point); rollout 2: unreadable answer (recorded, left out)
    cfg, state, cand, res = _judged_state(compose_cfg, tmp_path, [_answer(1, 0), "no json here"])
    out = judge_candidate(cfg, state, cand, res)
    assert out["score"] == pytest.approx(0.5) and out["n_valid"] == 1 and out["n_calls"] == 2
    assert [s["score"] for s in out["subtasks"]] == [1.0, 0.0] and out["calls"][1]["error"]
    assert state.records[cand.id]["judge_scores.json"] is out


def test_judge_score_is_none_when_no_call_is_valid(compose_cfg, tmp_path):
    cfg, state, cand, res = _judged_state(compose_cfg, tmp_path, [LLMError("down"), _answer(1, 2)])
    out = judge_candidate(cfg, state, cand, res)
    assert out["score"] is None and "not on the three_point scale" in out["calls"][1]["error"]


def test_judge_repeats_multiply_the_calls_and_the_prompt_shows_subtasks_and_keyframes(compose_cfg, tmp_path):
    cfg, state, cand, res = _judged_state(compose_cfg, tmp_path, [_answer(1, 1), _answer(0, 0)] * 2, "judge.repeats=2",
                                          "judge.state_table=true")
    out = judge_candidate(cfg, state, cand, res)
    assert out["n_calls"] == 4 and out["score"] == pytest.approx(0.5)
    prompt = out["calls"][0]["prompt"][1]["content"]
    assert "1. a: x (done when: y)" in prompt and "The state at 20 keyframes" in prompt and "State table" in prompt
    assert STATE_TEXT_JUDGE in state.substitutes


def test_vlm_judge_is_shown_the_keyframes_saved_with_the_candidate_rendered_once_per_rollout(compose_cfg, tmp_path,
                                                                                               monkeypatch):
    import imageio.v3 as iio

    from bird.components import judge
    from bird.envs.frames import RenderingUnavailable, gl_backend

    try:
        gl_backend()
    except RenderingUnavailable as exc:
        pytest.skip(f"no offscreen GL here ({exc})")
    renders = []
    real = judge.render_episode
    monkeypatch.setattr(judge, "render_episode", lambda *a, **k: renders.append(1) or real(*a, **k))
    cfg, state, cand, res = _judged_state(compose_cfg, tmp_path, [_answer(1, 1)] * 2, "judge.mode=vlm",
                                          "judge.rollouts=1", "judge.repeats=2", "feedback.judge_keyframes=4")
    out = judge_candidate(cfg, state, cand, res)
    assert out["n_calls"] == 2 and len(renders) == 1  # 2 judgements of one rollout, rendered once
    saved = sorted((tmp_path / "keyframes").glob("*.png"))
    assert [p.name for p in saved] == [f"{k:02d}_rollout0_step{t:04d}.png" for k, t in enumerate((0, 10, 20, 30))]
    first = out["calls"][0]
    assert first["judge_mode"] == "vlm" and "4 keyframes of it are attached" in first["prompt"][1]["content"]
    assert iio.imread(saved[0]).shape == (224, 224, 3) and STATE_TEXT_JUDGE not in state.substitutes


def test_offline_judge_scores_from_the_rows_it_is_shown():
    from bird.llm.offline.judge_synth import answer_judge_score

    rows = [{"step": 1, "state": {"hand": [0, 0, 0], "puck": [0.3, 0, 0]}},
            {"step": 2, "state": {"hand": [0.29, 0, 0], "puck": [0.3, 0, 0]}}]
    subs = [{"name": "reach", "description": "", "done_when": "norm(hand - puck) < 0.05"},
            {"name": "odd", "description": "", "done_when": "the puck is happy"}]
    answer = json.loads(answer_judge_score({"subtasks": subs, "scale": "three_point", "rollout": {"keyframes": rows}}, "L"))
    assert [s["score"] for s in answer["subtasks"]] == [1.0, 0.5] and "cannot read" in answer["subtasks"][1]["rationale"]
    far = [{**rows[0]}, {"step": 2, "state": {"hand": [0.0, 0.1, 0], "puck": [0.3, 0, 0]}}]
    answer = json.loads(answer_judge_score({"subtasks": subs[:1], "scale": "unit", "rollout": {"keyframes": far}}, "L"))
    assert answer["subtasks"][0]["score"] == 0.0


@pytest.mark.parametrize("answer,problem", [({"subtasks": []}, "non-empty"), ({"subtasks": [{"name": "a"}]}, "needs"),
                                            ({"subtasks": [{"name": "a", "description": "d", "done_when": "w"}] * 2}, "repeat"),
                                            ("nope", "non-empty")])
def test_subtask_list_schema_names_the_problem(answer, problem):
    assert any(problem in p for p in subtask_problems(answer))
    assert subtask_problems({"subtasks": [{"name": "a", "description": "d", "done_when": "w"}]}) == []
    assert "decompose.n_subtasks=2" in subtask_problems({"subtasks": [{"name": "a", "description": "d", "done_when": "w"}]}, 2)[0]


def _judge_prompts(compose_cfg, tmp_path, reward_scale: float, code_weight: float = 1.0) -> list[str]:
    """The judge requests for one candidate whose recorded total own reward is scaled by `reward_scale` (components,
    states and everything else unchanged), with the candidate's weights scaled by `code_weight` in its code."""
    from bird.learners.rollouts import load_rollouts

    cfg, state, cand, res = _judged_state(compose_cfg, tmp_path, [_answer(1, 0)] * 2)
    data = load_rollouts(res.rollouts_path)
    data["reward"] = data["reward"] * reward_scale
    path = tmp_path / f"scaled{reward_scale}.npz"
    save_rollouts(path, data)
    cand = replace(cand, code=CODE.format(w=code_weight).replace("'upright': 1.0", f"'upright': {code_weight}"))
    out = judge_candidate(cfg, state, cand, replace(res, rollouts_path=str(path)))
    return [json.dumps(c["prompt"]) for c in out["calls"]]


def test_the_judge_never_sees_the_total_own_reward_so_a_scaled_total_gets_the_same_request(compose_cfg, tmp_path):
    """BIRD's judge reads per-step reward components only, never the candidate's total or its return: a reward
    cannot win by inflating its own scale. The same code and components with the total ×10 give identical requests;
    scaling every weight in the code changes the code shown and nothing else."""
    base = _judge_prompts(compose_cfg, tmp_path, 1.0)
    assert base == _judge_prompts(compose_cfg, tmp_path, 10.0)
    assert "upright=" in base[0] and "alive=1.0" in base[0] and "reward=" not in base[0]
    scaled_code = _judge_prompts(compose_cfg, tmp_path, 10.0, code_weight=10.0)
    assert [p.replace("10.0", "1.0") for p in scaled_code] == base


def test_the_judge_evidence_check_catches_a_total_shown_to_the_judge(compose_cfg, tmp_path, monkeypatch):
    """Positive control: the old evidence (the total among the per-step values) makes the two requests differ."""
    from bird.components import judgement

    real = judgement.component_rows

    def with_total(data, ep, steps):
        idx = np.flatnonzero(data["episode"] == ep)
        return [{**row, "reward": round(float(data["reward"][idx[row["step"] - 1]]), 4)}
                for row in real(data, ep, steps)]

    monkeypatch.setattr(judgement, "component_rows", with_total)
    assert _judge_prompts(compose_cfg, tmp_path, 1.0) != _judge_prompts(compose_cfg, tmp_path, 10.0)


def test_the_judge_is_asked_for_the_failure_cascade_rubric_in_subtask_order(compose_cfg, tmp_path):
    prompt = _judge_prompts(compose_cfg, tmp_path, 1.0)[0]
    assert "Failure cascade" in prompt and "every later subtask counts as failed" in prompt
    assert "1 (success), 0.5 (partial success) or 0 (failure)" in prompt and "in order" in prompt


def _revise(cfg, state, tmp_path, answer: dict) -> dict:
    return co_evolve_subtasks(cfg, state, JournalGenerator(Scripted([json.dumps(answer)]), None), tmp_path)


def test_a_revision_changes_at_most_one_subtask_and_keeps_the_count(compose_cfg, tmp_path):
    cfg = compose_cfg("method=rda", ENV, "decompose.retries=0")
    state, _ = _searched(cfg, tmp_path, (0.5, 0.5), Recording())
    two = [{"name": "a", "description": "x", "done_when": "y"}, {"name": "b", "description": "x", "done_when": "y"}]
    state.subtasks, state.iteration = list(two), 1
    both = [{**two[0], "description": "new"}, {**two[1], "description": "new"}]
    assert "at most one" in _revise(cfg, state, tmp_path, {"subtasks": both})["attempts"][0]["problems"][0]
    assert "number of subtasks" in _revise(cfg, state, tmp_path, {"subtasks": two[:1]})["attempts"][0]["problems"][0]
    assert state.subtasks == two  # both refused: the list is kept
    one = [two[0], {**two[1], "done_when": "z"}]
    assert not _revise(cfg, state, tmp_path, {"subtasks": one})["kept_previous"] and state.subtasks == one
    assert not _revise(cfg, state, tmp_path, {"subtasks": one})["kept_previous"]  # unchanged = declined, valid


def test_the_decomposition_asks_for_the_generators_count_of_about_5_to_10(compose_cfg):
    from bird.components.subtasks import AUTO_COUNT, MAX_SUBTASKS

    assert "about 5 for a simple task, about 10" in AUTO_COUNT and MAX_SUBTASKS == 12
    twelve = {"subtasks": [{"name": f"s{i}", "description": "d", "done_when": "w"} for i in range(13)]}
    assert "at most 12" in subtask_problems(twelve)[-1]


def test_a_subtask_list_cut_at_the_output_limit_is_named_as_cut(compose_cfg):
    cfg = compose_cfg("method=rda", ENV, "decompose.retries=1")
    state = SearchState(make_adapter(cfg.env).spec, Plan(1, 2, 10, 10, 1, 1), 0, {})
    whole = '{"subtasks": [{"name": "a", "description": "d", "done_when": "w"}]}'
    cut = Response('```json\n{"subtasks": [{"name": "balance", "descri', "m", finish_reason="length")
    record = get("decompose", "subtask_list")(cfg, state, JournalGenerator(Scripted([cut, whole]), None))
    first = record["attempts"][0]["problems"]
    assert first[0] == f"the answer was cut off at the output limit (max_tokens={cfg.generate.max_tokens})"
    assert "the object is never closed: the answer looks cut off" in first[1]
    assert record["valid"] and record["attempts"][1]["problems"] == []


def test_co_evolution_keeps_the_list_when_the_revision_is_invalid_and_records_why(compose_cfg, tmp_path):
    cfg = compose_cfg("method=rda", ENV, "decompose.retries=0")
    state, _ = _searched(cfg, tmp_path, (0.5, 0.5), Recording())
    before = list(state.subtasks)
    state.iteration = 1
    record = co_evolve_subtasks(cfg, state, JournalGenerator(Scripted(['{"subtasks": []}']), None), tmp_path)
    assert record["kept_previous"] and state.subtasks == before and "non-empty" in record["attempts"][0]["problems"][0]
    lines = (tmp_path / "subtasks.jsonl").read_text().splitlines()
    assert json.loads(lines[-1])["kept_previous"] is True


def test_per_subtask_summaries_replace_the_feedback_and_carry_only_what_they_show(compose_cfg, tmp_path):
    cfg = compose_cfg("method=rda", ENV)
    state, reports = _searched(cfg, tmp_path, (0.5, 0.5), Recording())
    report = reports["it1-c0"]
    assert report.feedback.startswith("Summary of the feedback") and set(report.stats) == {"summary"}
    record = state.records["it1-c0"]["summary.json"]
    assert len(record["calls"]) == len(state.subtasks) and "Judge score" in record["raw"]
    raw = compose_cfg("method=rda", ENV, "feedback.summarisation=none")
    state2, reports2 = _searched(raw, tmp_path, (0.5, 0.5), Recording())
    assert reports2["it1-c0"].feedback.startswith("The policy trained") and "judge_score" in reports2["it1-c0"].stats


def test_rebuilt_prompt_is_one_user_message_with_the_lineage_and_the_blocks(compose_cfg, tmp_path):
    cfg = compose_cfg("method=era_u", ENV)
    state, _ = _searched(cfg, tmp_path, (0.5, 0.5), Recording())
    grand = state.candidates["it1-c1"]
    state.candidates["it1-c0"] = replace(state.candidates["it1-c0"], parent_id=grand.id)
    request = build_request(cfg, state, 0)
    assert [m.role for m in request.messages] == ["system", "user"]
    text = request.messages[1].content
    order = [text.index(s) for s in ("Reward function 1 of 2", "Reward function 2 of 2 (the current parent)",
                                     "improves on the current parent", "subtasks, in order", "behaved, per subtask",
                                     "design idea of the reward function above", "inside braces")]
    assert order == sorted(order)
    assert request.context["parent_thought"] == state.thoughts["it1-c0"]["aligned"]
    dialogue = build_request(compose_cfg("method=era_u", ENV, "generate.prompt_mode=dialogue"), state, 0)
    assert [m.role for m in dialogue.messages] == ["system", "user", "assistant", "user", "assistant", "user"]


@pytest.mark.parametrize("fitness,kept", [((0.5, 0.5), "old"), ((0.5, 0.4), "old"), ((0.5, 0.6), "new"), ((None, 0.1), "new")])
def test_incumbent_gate_replaces_only_on_strict_improvement_and_chain_end_follows(compose_cfg, fitness, kept):
    from bird.types import Report

    cfg = compose_cfg("method=era_u", ENV)
    state = SearchState(None, Plan(1, 3, 10, 10, 1, 1), 0, {})  # type: ignore[arg-type]
    old, new = Candidate("it1-c0", 1, 0, []), Candidate("it2-c0", 2, 0, [])
    state.candidates = {old.id: old, new.id: new}
    state.results = {c.id: TrainResult(c.id, 0, (), 0, 0.0) for c in (old, new)}
    state.reports = {old.id: Report(old.id, fitness[0], ""), new.id: Report(new.id, fitness[1], "")}
    state.iteration_best = state.returned = old.id
    select(cfg, state, [new], {new.id: state.reports[new.id]})
    expect = old.id if kept == "old" else new.id
    assert state.iteration_best == expect and state.returned == expect
    ungated = compose_cfg("method=era_u", ENV, "select.require_improvement_over_incumbent=false")
    state.iteration_best = old.id
    select(ungated, state, [new], {new.id: state.reports[new.id]})
    assert state.iteration_best == new.id and state.returned == new.id  # the end of the chain, even when worse


class _Down(Generator):
    provider = "down-test"

    def complete(self, request: Request) -> Response:
        raise LLMError("judge down")


def test_a_failed_summary_shows_the_raw_evidence_and_records_the_error(compose_cfg, tmp_path):
    from bird.components.summary import summarise

    cfg = compose_cfg("method=eureka", ENV, "+choice=summarized_feedback")
    state = SearchState(make_adapter(cfg.env).spec, Plan(1, 2, 10, 10, 1, 1), 0, {})
    state.judge = JournalGenerator(_Down("x"), None)
    cand = Candidate("it1-c0", 1, 0, [], code="x")
    text, stats = summarise(cfg, state, cand, "raw feedback text", {"components": {"a": [1.0]}})
    assert "raw feedback text" in text and stats["summary"][0]["failed"]
    assert state.records[cand.id]["summary.json"]["calls"][0]["error"] == "judge down"
