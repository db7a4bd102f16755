"""What bird reads from an answer (docs/llm.md, "What bird does with an answer"): the visible text with thinking spans
set aside (bird/llm/visible.py) and the parts of either wire format by kind (bird/llm/content.py), one behaviour
each, on answers where reading the wrong part gives a different result."""

from __future__ import annotations

from typing import Any

import pytest

from bird.llm.content import Content, from_openai_message, read_parts
from bird.llm.visible import Visible, normalise, visible


# --- visible text -----------------------------------------------------------------------------------------------
def test_normalise_makes_line_ends_unix_drops_invisible_characters_and_keeps_spaces():
    assert normalise("a\r\nb\rc\n") == "a\nb\nc\n"
    assert normalise("\ufeffx\u200by\u200cz\u200dw\u2060v\u180eu") == "xyzwvu"
    assert normalise("a\u00a0b\u202fc") == "a b c"
    assert normalise(None) == ""  # type: ignore[arg-type]


def test_an_answer_without_thinking_is_its_normalised_text_with_no_notes():
    assert visible("x = 1\r\ny = 2\u200b") == Visible("x = 1\ny = 2")


@pytest.mark.parametrize("tags", [("<think>", "</think>"), ("<THINKING>", "</Thinking>"),
                                  ("<reasoning>", "</reasoning>"), ("\u25c1think\u25b7", "\u25c1/think\u25b7")])
def test_each_kind_of_thinking_tag_is_set_aside_with_its_lines_kept_empty(tags):
    opened, closed = tags
    shown = visible(f"a\n{opened}\nhidden\n{closed}\nb")
    assert shown.text == "a\n\n\n\nb"
    assert shown.thinking == (f"{opened}\nhidden\n{closed}",)
    assert shown.notes == ("thinking set aside: lines 2-4",)


def test_a_closing_tag_without_an_opening_one_ends_thinking_that_began_with_the_answer():
    shown = visible("the template opened it\nstill thinking</think>\ncode")
    assert shown.text == "\n\ncode"
    assert shown.thinking == ("the template opened it\nstill thinking</think>",)
    assert shown.notes == ("thinking set aside: lines 1-2",)


def test_a_closing_tag_after_an_opening_one_is_not_read_as_the_answers_start():
    shown = visible("keep\n<think>x</think>\nkeep too")
    assert shown.text == "keep\n\nkeep too" and shown.thinking == ("<think>x</think>",)


def test_several_spans_are_each_set_aside_and_an_unclosed_one_runs_to_the_end():
    shown = visible("a<think>1</think>b\n<think>2</think>c\n<think>3\nd")
    assert shown.text == "ab\nc\n\n"
    assert shown.thinking == ("<think>1</think>", "<think>2</think>", "<think>3\nd")
    assert shown.notes == ("thinking set aside: lines 1-1", "thinking set aside: lines 2-2",
                           "thinking set aside: lines 3-4 (never closed)")


def test_a_span_closed_at_the_very_end_of_the_answer_is_closed():
    shown = visible("x\n<think>y</think>")
    assert shown.text == "x\n" and shown.notes == ("thinking set aside: lines 2-2",)


# --- parts by kind -------------------------------------------------------------------------------------------------
class Dumped:
    """An SDK object (pydantic): read through model_dump."""

    def __init__(self, data: dict[str, Any], old: bool = False) -> None:
        self.data, self.old = data, old

    def model_dump(self, **kwargs: Any) -> dict[str, Any]:
        if self.old and kwargs:
            raise TypeError("model_dump() got an unexpected keyword argument 'warnings'")
        assert kwargs in ({}, {"warnings": False})
        return self.data


def test_text_parts_are_joined_each_on_its_own_line():
    got = read_parts([{"type": "text", "text": "a"}, {"type": "output_text", "text": "b\n"}, "c", "",
                      {"type": "text", "text": ""}, {"type": "text", "text": "d"}])
    assert got == Content(text="a\nb\nc\nd")


@pytest.mark.parametrize("kind", ["thinking", "reasoning", "reasoning_content", "reasoning_text", "summary_text"])
def test_each_kind_of_thinking_part_is_thinking_not_text(kind):
    got = read_parts([{"type": kind, kind: "hmm"}, {"type": "text", "text": "x"}])
    assert (got.text, got.thinking) == ("x", "hmm")


def test_a_thinking_part_without_its_own_field_gives_its_text_and_mistrals_list_of_parts_is_joined():
    assert read_parts([{"type": "reasoning_text", "text": "t"}]).thinking == "t"
    mistral = {"type": "thinking", "thinking": [{"type": "text", "text": "one "}, {"type": "text", "text": "two"}]}
    assert read_parts([mistral]).thinking == "one two"


def test_the_first_field_holding_text_is_a_parts_text():
    assert read_parts([{"type": "thinking", "summary": "s", "content": "c"}]).thinking == "c"
    assert read_parts([{"type": "thinking", "thinking": "", "value": "v", "refusal": "r"}]).thinking == "v"
    assert read_parts([{"type": "thinking", "text": None, "reasoning": "r"}]).thinking == "r"
    assert read_parts([{"type": "thinking", "text": 5}]).thinking == ""


def test_lists_of_parts_nested_deeper_than_five_levels_are_not_read():
    five = {"type": "thinking", "thinking": [[[[["deep"]]]]]}
    six = {"type": "thinking", "thinking": [[[[[["deep"]]]]]]}
    assert read_parts([five]).thinking == "deep"
    assert read_parts([six]).thinking == ""


def test_redacted_thinking_refusals_tool_calls_and_unknown_parts_each_go_where_they_belong():
    got = read_parts([{"type": "redacted_thinking", "data": "x"}, {"type": "refusal", "refusal": "no"},
                      {"type": "tool_use", "name": "f", "input": {"a": 1}}, {"type": "image" + "x" * 50},
                      7, {"type": "redacted_reasoning"}], where="block")
    assert (got.text, got.thinking, got.refusal) == ("", "", "no")
    assert got.tool_calls == ({"name": "f", "arguments": {"a": 1}},)
    assert got.set_aside == (
        "block 1 (redacted_thinking) set aside: thinking the provider does not show",
        f"block 4 of type {('image' + 'x' * 50)[:40]!r} set aside: bird reads text, thinking, refusal and tool-call "
        "parts",
        "block 5 (int) set aside: not a part",
        "block 6 (redacted_reasoning) set aside: thinking the provider does not show")


def test_a_part_with_no_type_is_set_aside_by_default_name():
    assert read_parts([{"text": "x"}]).set_aside == (
        "content part 1 of type '' set aside: bird reads text, thinking, refusal and tool-call parts",)


@pytest.mark.parametrize("part", [{"type": "tool_call", "function": {"name": "g", "arguments": "{}"}},
                                  {"type": "function_call", "name": "g", "arguments": "{}"},
                                  {"type": "tool_call", "function": Dumped({"name": "g", "arguments": "{}"})}])
def test_tool_calls_of_each_form_give_their_name_and_arguments(part):
    assert read_parts([part]).tool_calls == ({"name": "g", "arguments": "{}"},)


def test_a_tool_calls_input_wins_over_its_arguments_and_a_missing_name_is_empty():
    got = read_parts([{"type": "tool_use", "input": {"x": 1}, "arguments": "ignored"}])
    assert got.tool_calls == ({"name": "", "arguments": {"x": 1}},)


def test_sdk_objects_are_read_through_model_dump_old_pydantic_too():
    parts = [Dumped({"type": "text", "text": "new"}), Dumped({"type": "text", "text": "old"}, old=True)]
    assert read_parts(parts).text == "new\nold"


def test_an_openai_message_with_string_content_and_reasoning_fields():
    got = from_openai_message({"content": "code", "reasoning_content": "a", "reasoning": "b", "refusal": "r"})
    assert got == Content(text="code", thinking="a\nb", refusal="r")
    assert from_openai_message({"content": None}) == Content()
    assert from_openai_message("not a message") == Content()


def test_an_openai_message_with_list_content_keeps_the_parts_thinking_after_the_fields():
    got = from_openai_message({"content": [{"type": "thinking", "thinking": "part"}, {"type": "refusal",
                                                                                     "refusal": "no"}],
                               "reasoning": "field", "refusal": "top"})
    assert (got.thinking, got.refusal) == ("field\npart", "top\nno")


def test_an_openai_messages_tool_calls_and_legacy_function_call_are_all_kept_in_order():
    got = from_openai_message(Dumped({
        "content": [{"type": "tool_call", "function": {"name": "a", "arguments": "1"}}],
        "tool_calls": [{"function": {"name": "b", "arguments": "2"}}, "junk"],
        "function_call": {"name": "c", "arguments": "3"}}))
    assert [c["name"] for c in got.tool_calls] == ["a", "b", "c"]
    assert from_openai_message({"function_call": "junk", "tool_calls": None}).tool_calls == ()


def test_an_openai_message_whose_content_is_neither_text_nor_parts_is_set_aside():
    assert from_openai_message({"content": {"text": "x"}}) == Content(
        set_aside=("message content of type dict set aside: not text or a list of parts",))


def test_an_answer_that_opens_with_thinking_has_it_set_aside():
    shown = visible("<think>plan</think>\ncode")
    assert shown.text == "\ncode" and shown.thinking == ("<think>plan</think>",)


def test_thinking_lines_are_counted_from_the_answers_first_line_even_an_empty_one():
    assert visible("\n<think>x</think>\ny").notes == ("thinking set aside: lines 2-2",)


def test_fields_nested_deeper_than_five_levels_are_not_read():
    def nest(levels: int) -> Any:
        value: Any = "deep"
        for _ in range(levels):
            value = {"text": value}
        return value

    assert read_parts([{"type": "thinking", "thinking": nest(5)}]).thinking == "deep"
    assert read_parts([{"type": "thinking", "thinking": nest(6)}]).thinking == ""


def test_a_part_holding_no_text_in_a_list_of_parts_adds_nothing():
    part = {"type": "thinking", "thinking": [{"signature": "abc"}, "kept"]}
    assert read_parts([part]).thinking == "kept"
