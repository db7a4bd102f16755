"""parse_json_answer: the JSON object of an LLM answer, or an error that says what is wrong."""

from __future__ import annotations

import pytest

from bird.llm.parsing import AnswerParseError, parse_json_answer


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"score": 3}', {"score": 3}),
        ('Here you go:\n```json\n{"a": [1, 2]}\n```\nDone.', {"a": [1, 2]}),
        ('```\n{"a": 1}\n```', {"a": 1}),
        ('Reasoning first. {"why": "a } in a string \\" and quote", "b": {"c": null}} trailing', {"why": 'a } in a string " and quote', "b": {"c": None}}),
        ('```json\n[1]\n```\n```json\n{"second": true}\n```', {"second": True}),
    ],
)
def test_parse_json_answer_finds_the_object(text, expected):
    assert parse_json_answer(text) == expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty answer"),
        ("   \n", "empty answer"),
        ("I cannot do that.", "no JSON object in answer; it starts 'I cannot do that.'"),
        ('{"a": 1, "b": ', "broken JSON at line 1 column 15: Expecting value"),
        ('```json\n{"a": 1 "b": 2}\n```', "broken JSON at line 1 column 9"),
        ('```json\n{"subtasks": [{"name": "reach", "score": 3},', "(the object is never closed: the answer looks cut off)"),
        ("```json\n[1, 2]\n```", "expected a JSON object, got list"),
    ],
)
def test_parse_json_answer_raises_a_clear_error(text, message):
    with pytest.raises(AnswerParseError) as err:
        parse_json_answer(text)
    assert message in str(err.value)
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize(
    "text, expected",
    [
        # a closing fence is never read as the opening of the next block (the prose between is not JSON)
        ('```python\nx = {1: 2}\n```\nSome prose {with braces}.\n```json\n{"a": 1}\n```', {"a": 1}),
        # a brace in the prose before the object is skipped
        ('My design {reach, then push} scores:\n{"score": 4, "why": "ok"}', {"score": 4, "why": "ok"}),
        # tags in any case, ~~~ fences, indented fences
        ('~~~JSON\n{"a": 2}\n~~~', {"a": 2}),
        ('1. The answer:\n   ```json\n   {"a": 3}\n   ```', {"a": 3}),
        # a Python dict literal and a trailing comma are read (safely: ast.literal_eval)
        ("Verdict: {'score': 0.5, 'ok': True, 'notes': None}", {"score": 0.5, "ok": True, "notes": None}),
        ('```json\n{"a": 1,}\n```', {"a": 1}),
        # braces of a Python block are not an object; the prose's one is
        ('```python\nw = {"x": 1}\n```\n{"graph": []}', {"graph": []}),
    ],
)
def test_parse_json_answer_reads_what_models_write(text, expected):
    assert parse_json_answer(text) == expected


def test_parse_json_answer_never_evaluates_code():
    with pytest.raises(AnswerParseError):
        parse_json_answer("{'a': __import__('os').getpid()}")
