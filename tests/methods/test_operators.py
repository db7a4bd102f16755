"""LLM operators (REvolve's mutation/crossover, RF-Agent's tree actions), critics, self-verification and repair with
the trace: the prompt shows what the context says and nothing the method may not see, and the offline synthesiser
answers every new request kind from the request alone."""

import json

import pytest

from bird.components.critics import _critic_request
from bird.components.operators import SamplePlan, operator_request
from bird.components.self_verify import _request as self_verify_request
from bird.components.self_verify import parse_rating
from bird.config.load import ConfigError
from bird.envs.registry import make_adapter
from bird.llm.offline import LABEL, OfflineSynthesiser
from bird.llm.offline.proposals import parent_terms
from bird.registry import get
from bird.reward.extract import extract_code
from bird.reward.static import check_source
from bird.stages.feedback import feedback
from bird.stages.generate import build_request
from bird.state import Plan, SearchState
from bird.types import Candidate, Checkpoint, Failure, FailureKind, TrainResult

LEAKS = ("_get_rew", "healthy_reward", "ctrl_cost", "forward_reward_weight", "is_success", "reference_return",
         "reference_reward", "777.77")
TREE_ACTIONS = ("mutation_mechanism", "mutation_param", "crossover_elite", "path_reasoning", "different_thought")


def _trained_state(cfg, n=3):
    """Iteration 2 of a search with n offline programs from iteration 1, trained (hand-made curves) and reported."""
    adapter = make_adapter(cfg.env)
    state = SearchState(adapter.spec, Plan(2, 3, 10, 10, 1, 1), 0, {})
    state.iteration = 1
    gen = OfflineSynthesiser("bird-offline-synth-v1")
    state.judge = gen  # thought alignment / self-verification, when the method asks for them
    cands = []
    for i in range(n):
        req = build_request(cfg, state, i)
        text = gen.complete(req).text
        cand = Candidate(f"it1-c{i}", 1, i, req.messages_json(), response=text, code=extract_code(text, "compute_reward"),
                         parent_id=None if i == 0 else "it1-c0")
        state.candidates[cand.id] = cand
        cands.append(cand)
    results = {}
    for i, c in enumerate(cands):
        curve = tuple(Checkpoint(1000 * k, 0.1 * k + i, 0.0, 5.0, 777.77, 10.0, {"forward_progress": 0.5 * k})
                      for k in (1, 2))
        results[c.id] = TrainResult(c.id, 0, curve, 2000, 1.0)
    state.results.update(results)
    state.reports.update(feedback(cfg, state, cands, results))
    state.iteration = 2
    return state


@pytest.fixture(scope="module")
def revolve(compose_cfg):
    # the benchmark score as task_score, so that 777.77 (the reference return) is a leak here; the native task_score
    # these methods show under BIRD's protocol is audited in tests/test_leak_audit.py
    cfg = compose_cfg("method=revolve", "env=mujoco/hopper", "+choice=benchmark_score_shown")
    return cfg, _trained_state(cfg)


@pytest.fixture(scope="module")
def rf_agent(compose_cfg):
    cfg = compose_cfg("method=rf_agent", "env=mujoco/hopper", "+choice=benchmark_score_shown")  # as `revolve`
    return cfg, _trained_state(cfg)


def _blob(req):
    return json.dumps(req.messages_json()) + json.dumps(req.context, default=str)


def _answer_is_a_program(req):
    text = OfflineSynthesiser("m").complete(req).text
    code = extract_code(text, "compute_reward")
    assert code is not None and check_source(code) is None, text[:500]
    assert LABEL in text
    return text, code


@pytest.mark.parametrize("op,parents", [("mutation", ("it1-c1",)), ("crossover", ("it1-c1", "it1-c2"))])
def test_revolve_operator_prompts_show_the_parents_and_the_offline_answer_builds_on_them(revolve, op, parents):
    cfg, state = revolve
    req = operator_request(cfg, state, 0, SamplePlan(op, parents))
    user = req.messages[-1].content
    assert [p["id"] for p in req.context["parents"]] == list(parents)
    for p in parents:
        assert state.candidates[p].code in user and state.reports[p].feedback in user
    assert "class HopperEnv" in user and "Pythonic class abstraction" in user  # BIRD Table 9
    assert not any(leak in _blob(req) for leak in LEAKS)
    _, code = _answer_is_a_program(req)
    terms = {t.name for t in parent_terms(code)}
    assert {t.name for t in parent_terms(state.candidates[parents[0]].code)} & terms  # built on parent A
    if op == "crossover":
        b_only = {t.name for t in parent_terms(state.candidates[parents[1]].code)} - \
            {t.name for t in parent_terms(state.candidates[parents[0]].code)}
        assert not b_only or terms & b_only  # one of B's terms came along


@pytest.mark.parametrize("action", TREE_ACTIONS)
def test_every_tree_action_shows_the_path_and_thoughts_and_gets_an_offline_answer(rf_agent, action):
    cfg, state = rf_agent
    state.thoughts["it1-c0"] = {"stated": "root idea: go forward", "aligned": None}
    parents = ("it1-c1", "it1-c2") if action == "crossover_elite" else ("it1-c1",)
    req = operator_request(cfg, state, 0, SamplePlan(action, parents))
    user = req.messages[-1].content
    assert [p["id"] for p in req.context["path"]] == ["it1-c0", "it1-c1"]  # root side first, leaf last
    assert "root idea: go forward" in user and req.context["path"][0]["thought"] == "root idea: go forward"
    assert "inside braces" in user and req.context["design_thought"] == "inline_brace"
    assert not any(leak in _blob(req) for leak in LEAKS)
    text, _ = _answer_is_a_program(req)
    assert text.startswith("{")  # the offline answer states its design thought in braces, as asked
    assert text == OfflineSynthesiser("m").complete(req).text  # deterministic: the request alone decides


def test_critic_and_self_verify_requests_are_answered_from_the_request_alone(compose_cfg):
    cfg = compose_cfg("method=rstar", "env=mujoco/hopper", "+choice=benchmark_score_shown")  # task_score: 0.1, 0.2
    state = _trained_state(cfg)
    critic = _critic_request(cfg, state, 3)
    assert critic.purpose == "critic" and "You are a critic" in critic.messages[-1].content
    assert not any(leak in _blob(critic) for leak in LEAKS)
    _answer_is_a_program(critic)
    sv = self_verify_request(cfg, state, state.candidates["it1-c0"], state.reports["it1-c0"])
    assert set(sv.context) == {"code", "feedback", "task"}
    rating = parse_rating(OfflineSynthesiser("m").complete(sv).text)
    assert rating == pytest.approx(1 / 3, abs=1e-3)  # task_score shown 0.1 → 0.2: (0.2 − 0.1) / (0.1 + 0.2)
    assert parse_rating("I think it is fine.\nRating: 7") == 1.0 and parse_rating("no number") is None


@pytest.mark.parametrize("text, rating", [
    ("**Rating:** -0.5", -0.5), ("Final rating = **+.7**", 0.7), ("rating: [0.3]", 0.3),
    ("Rating (from -1 to 1): 0.6", 0.6), ("Rating: 0.2 at first.\nOn reflection, Rating: -0.1", -0.1),
    ("The rating is high.", None),
])
def test_parse_rating_reads_the_shapes_models_write(text, rating):
    assert parse_rating(text) == rating


def test_repair_with_trace_shows_the_failed_answer_and_its_error(rf_agent):
    cfg, state = rf_agent
    req = build_request(cfg, state, 0)
    bad = Candidate("it2-c0", 2, 0, req.messages_json(), response="```python\ndef compute_reward(o, a, n, i):\n"
                    "    return o['nope'], {}\n```", code="def compute_reward(o, a, n, i):\n    return o['nope'], {}\n",
                    failure=Failure(FailureKind.RUNTIME_ERROR, "KeyError: 'nope'", "Traceback ...\nKeyError: 'nope'"),
                    request=req)
    again = get("repair", "with_trace")(cfg, bad, 8)
    assert again.purpose == "repair" and again.sample_index == 8
    assert [m.role for m in again.messages][-2:] == ["assistant", "user"]
    assert "KeyError: 'nope'" in again.messages[-1].content and again.context["error"].startswith("KeyError")
    assert get("repair", "blind")(cfg, bad, 8).messages == req.messages
    _answer_is_a_program(again)


def test_a_method_written_for_meta_world_refuses_another_suite_before_running(compose_cfg):
    with pytest.raises(ConfigError, match=r"t2r_zeroshot' is written for suites \['metaworld'\]"):
        compose_cfg("method=t2r_zeroshot", "env=mujoco/hopper")
    assert compose_cfg("method=t2r_zeroshot", "env=metaworld/push").generate.suites == ["metaworld"]


def test_offline_crossover_keeps_parent_a_and_takes_a_term_only_b_has(revolve):
    from bird.llm.base import Request
    from bird.llm.offline.terms import Term, render_program

    cfg, state = revolve
    a = render_program([Term("forward_progress", "progress", ("rootx_vel",)), Term("alive", "alive", (), 0.1)], "a")
    b = render_program([Term("forward_progress", "progress", ("rootx_vel",), 3.0),
                        Term("upright", "upright", ("rooty_angle",), 0.3, "exp", 0.1)], "b")
    ctx = {"obs_fields": [], "task": "hop", "operator": "crossover",
           "parents": [{"id": "a", "code": a, "feedback": {}}, {"id": "b", "code": b, "feedback": {}}], "parent_code": a}
    text = OfflineSynthesiser("m").complete(Request("crossover", (), ctx)).text
    child = {t.name: t for t in parent_terms(extract_code(text, "compute_reward"))}
    assert set(child) == {"forward_progress", "alive", "upright"}
    assert child["forward_progress"].weight == 1.0 and child["upright"].temp == 0.1  # A's own term, B's new one


@pytest.mark.parametrize("seed", range(4))
def test_offline_crossover_of_a_parent_whose_terms_b_all_has_swaps_in_a_shared_term_of_b(seed):
    """B's terms ⊂ A's, A has more: the child is A with one term both share taken from B (was: StopIteration when
    the term picked was one only A has)."""
    from bird.llm.base import Request
    from bird.llm.offline.terms import Term, render_program

    a = render_program([Term("alive", "alive", (), 0.1), Term("forward_progress", "progress", ("rootx_vel",)),
                        Term("upright", "upright", ("rooty_angle",), 0.3, "exp", 0.1)], "a")
    b = render_program([Term("forward_progress", "progress", ("rootx_vel",), 3.0)], "b")
    ctx = {"obs_fields": [], "task": "hop", "operator": "crossover_elite", "parent_code": a,
           "parents": [{"id": "a", "code": a, "feedback": {}}, {"id": "b", "code": b, "feedback": {}}]}
    text = OfflineSynthesiser("m").complete(Request("crossover", (), ctx, sample_index=seed, seed=seed)).text
    child = {t.name: t for t in parent_terms(extract_code(text, "compute_reward"))}
    assert set(child) == {"alive", "forward_progress", "upright"}
    assert child["forward_progress"].weight == 3.0 and child["alive"].weight == 0.1  # B's shared term, A's own
