"""The offline synthesiser: deterministic, uses only the request, mutates in response to the feedback shown."""

import json

from bird.llm.base import Message, Request
from bird.llm.offline.synth import OfflineSynthesiser, parent_terms
from bird.reward.static import check_source
from bird.stages.extract import extract_code

FIELDS = [
    {"name": "rooty_angle", "size": 1, "kind": "angle", "axis": "y", "always_zero": False},
    {"name": "rootx_vel", "size": 1, "kind": "velocity", "axis": "x", "always_zero": False},
    {"name": "thigh_angvel", "size": 1, "kind": "angular_velocity", "axis": "y", "always_zero": False},
]


def _request(purpose="reward", sample=0, **context):
    ctx = {"task": "Hop forward as fast as possible without falling.", "obs_fields": FIELDS, "action_dim": 3, **context}
    return Request(purpose, (Message("user", "prompt"),), ctx, sample_index=sample, seed=0)


def test_same_request_gives_the_same_program_and_samples_differ():
    gen = OfflineSynthesiser("offline")
    first = [gen.complete(_request(sample=i)).text for i in range(4)]
    again = [gen.complete(_request(sample=i)).text for i in range(4)]
    assert first == again
    assert len(set(first)) > 1


def test_programs_follow_the_contract_and_pass_static_checks():
    gen = OfflineSynthesiser("offline")
    for i in range(8):
        code = extract_code(gen.complete(_request(sample=i)).text)
        assert code is not None and check_source(code) is None
        assert "forward_progress" in code  # "forward" in the task text → progress along the x velocity


def _parent(terms):
    from bird.llm.offline.terms import render_program

    return render_program(terms, "parent")


def test_flat_component_is_rescaled_and_dominant_component_is_scaled_down():
    from bird.llm.offline.terms import Term

    parent = [Term("forward_progress", "progress", ("rootx_vel",), 1.0),
              Term("upright", "upright", ("rooty_angle",), 1.0, "exp", 0.1),
              Term("action_cost", "control", (), 1.0)]
    feedback = {"components": {"forward_progress": [0.1, 0.5, 1.0], "upright": [0.5, 0.5, 0.5],
                               "action_cost": [-50.0, -40.0, -60.0]}, "task_score": [0.2, 0.3, 0.4]}
    gen = OfflineSynthesiser("offline")
    child = parent_terms(extract_code(gen.complete(
        _request("mutation", parent_code=_parent(parent), feedback=feedback)).text))
    by_name = {t.name: t for t in child}
    assert by_name["upright"].temp != 0.1  # barely changes → temperature changed
    assert by_name["action_cost"].weight < 1.0  # dominates → scaled down


def test_zero_score_restructures_the_program():
    from bird.llm.offline.terms import Term

    parent = [Term("forward_progress", "progress", ("rootx_vel",), 1.0), Term("alive", "alive", (), 1.0)]
    feedback = {"components": {"forward_progress": [0.0, 0.1], "alive": [1.0, 1.0]}, "task_score": [0.0, 0.0]}
    gen = OfflineSynthesiser("offline")
    structures = set()
    for i in range(6):
        child = parent_terms(extract_code(gen.complete(
            _request("mutation", sample=i, parent_code=_parent(parent), feedback=feedback)).text))
        structures.add(tuple(sorted(t.name for t in child)))
    assert any(s != ("alive", "forward_progress") for s in structures)


def test_answer_depends_only_on_the_request():
    gen = OfflineSynthesiser("offline")
    a = gen.complete(_request()).text
    gen2 = OfflineSynthesiser("offline")
    assert gen2.complete(_request()).text == a
    assert json.dumps(_request().context)  # the context is plain data


def test_position_pairs_match_whole_words_not_substrings():
    from bird.llm.offline.synth import _position_pairs

    fields = [
        {"name": "hand_pos", "size": 3, "kind": "position"},
        {"name": "drawer_handle_pos", "size": 3, "kind": "position"},
        {"name": "goal_pos", "size": 3, "kind": "goal"},
    ]
    assert _position_pairs(fields) == [("hand_pos", "drawer_handle_pos"), ("drawer_handle_pos", "goal_pos")]
