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
        ('```json\n{"a": 1,}\n```', "broken JSON at line 1 column 9"),
        ("```json\n[1, 2]\n```", "expected a JSON object, got list"),
    ],
)
def test_parse_json_answer_raises_a_clear_error(text, message):
    with pytest.raises(AnswerParseError) as err:
        parse_json_answer(text)
    assert message in str(err.value)
    assert isinstance(err.value, ValueError)
