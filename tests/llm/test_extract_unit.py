"""Fenced blocks (bird/llm/blocks.py) and program extraction (bird/reward/extract.py) on the cases the corpus does not
spell out: Windows line ends, a parent quoted with other formatting, helpers of helpers, one name of a multi-name
import, __future__ kept first."""

from __future__ import annotations

from bird.llm.blocks import fenced_blocks, outside_blocks
from bird.reward.extract import extract_program

ENTRY = "def compute_reward(obs, action, next_obs, info):\n"


def test_blocks_record_tag_lines_and_whether_they_were_closed():
    text = "intro\n```Python\n  a = 1\n  b = 2\n```\nmid\n~~~\nc\n"
    first, second = fenced_blocks(text)
    assert (first.index, first.tag, first.text, first.start, first.end, first.closed) == (1, "python", "a = 1\nb = 2",
                                                                                          3, 4, True)
    assert (second.tag, second.text, second.closed, second.span) == ("", "c", False, (7, 8))
    assert outside_blocks(text).split("\n") == ["intro", "", "", "", "", "mid", "", ""]


def test_windows_line_ends_are_read_like_unix_ones():
    text = "Reward:\r\n```python\r\n" + ENTRY.replace("\n", "\r\n") + "    return next_obs['x'], {}\r\n```\r\n"
    assert extract_program(text).code == ENTRY + "    return next_obs['x'], {}\n"


def test_a_parent_quoted_with_other_formatting_and_comments_is_still_the_parent():
    parent = "import numpy as np\n\n\n" + ENTRY + "    r = np.tanh(next_obs['x'])\n    return r, {'r': r}\n"
    quoted = "def compute_reward(obs,action,next_obs,info):\n    # the old one\n    r = np.tanh( next_obs[\"x\"] )\n" \
             "    return r, {\"r\": r}\n"
    new = ENTRY + "    return next_obs['x'], {}\n"
    found = extract_program(f"```python\n{new}```\nbefore:\n```python\n{quoted}```\n", known=[parent])
    assert found.code == new and "repeats a program the prompt showed" in found.notes[0]


def test_helpers_of_helpers_are_gathered_and_only_the_needed_import_name():
    helpers = "import numpy as np, scipy\n\ndef inner(v):\n    return np.abs(v)\n\ndef outer(v):\n    return inner(v) * 2\n"
    main = ENTRY + "    return outer(next_obs['x']), {}\n"
    found = extract_program(f"```python\n{main}```\n```python\n{helpers}```\n")
    assert found.code == ("import numpy as np\n\ndef inner(v):\n    return np.abs(v)\n\ndef outer(v):\n"
                          "    return inner(v) * 2\n\n" + main)
    assert "scipy" not in found.code


def test_future_imports_stay_first_when_imports_are_added():
    main = "from __future__ import annotations\n\n" + ENTRY + "    return np.tanh(next_obs['x']), {}\n"
    found = extract_program(f"```python\nimport numpy as np\n```\n```python\n{main}```\n")
    assert found.code == ("from __future__ import annotations\nimport numpy as np\n\n" + ENTRY
                          + "    return np.tanh(next_obs['x']), {}\n")


def test_required_names_accept_either_alternative():
    fns = "def determine_subtask(obs):\n    return 0\n\ndef progress(obs):\n    return 0.0\n"
    found = extract_program(f"```python\nPLAN_LIST = ['reach']\n```\n```python\n{fns}```",
                            "progress", required=(("determine_subtask",), ("plan_list", "PLAN_LIST")))
    assert found.code == "PLAN_LIST = ['reach']\n\n" + fns


def test_a_later_version_that_does_not_parse_wins_over_an_earlier_one_that_does():
    good = ENTRY + "    return next_obs['x'], {}\n"
    broken = ENTRY + "    return next_obs['x'] {}\n"
    found = extract_program(f"```python\n{good}```\nFixed:\n```python\n{broken}```\n")
    assert found.code == broken and "does not parse" in found.notes[-1]


def test_hostile_answers_give_a_failure_not_a_crash():
    from bird.llm.base import Response
    from bird.llm.parsing import AnswerParseError, parse_json_answer
    from bird.registry import get
    from bird.reward.contracts import read_answer
    from bird.reward.static import check_source

    deep = ENTRY + "    x = " + "1+" * 100_000 + "1\n    return x, {}\n"
    texts = [f"```python\n{deep}```", "```python\n" + "(" * 50_000 + "\n```", "{\"a\": " * 20_000,
             "```\n" * 5_000, "\x00" * 10]
    for text in texts:
        reading = read_answer(get("contract", "compute_reward"), Response(text, "m", finish_reason="stop"), 4096)
        assert (reading.code is None) != (reading.failure is None)
        if reading.code is not None:
            assert check_source(reading.code).kind.value == "compile_error"
        try:
            parse_json_answer(text)
        except AnswerParseError:
            pass


def _reward_at(code: str, angle: float) -> float:
    """Run a trusted test program (written in this file) on one hand-made observation."""
    namespace: dict = {}
    exec(compile(code, "<test program>", "exec"), namespace)  # noqa: S102 - a fixture of this file, not an answer
    return float(namespace["compute_reward"](None, None, {"rooty_angle": angle}, {})[0])


def test_a_helper_revised_in_a_later_block_is_the_one_trained_and_behaves_as_revised():
    """Issue 44: the first draft of a helper (cos: a hopper lying at 2*pi scores 1.0) and its correction in a later
    block (exp(-|angle|): it scores ~0.002) differ in behaviour; the trained program behaves as the correction."""
    first = "import math\n\n\ndef upright(angle):\n    return math.cos(angle)\n\n\n" + ENTRY + \
            "    return upright(next_obs['rooty_angle']), {}\n"
    fix = "def upright(angle):\n    return math.exp(-abs(angle))\n"
    found = extract_program(f"```python\n{first}```\n\nCorrection, `upright` should be:\n\n```python\n{fix}```\n")
    assert _reward_at(first, 2 * 3.141592653589793) == 1.0  # the draft's behaviour
    assert abs(_reward_at(found.code, 2 * 3.141592653589793) - 0.00187) < 1e-4
    assert "took the latest definition of upright from block 2" in found.notes[-1]


def test_a_later_helper_that_only_repeats_the_parent_does_not_replace_the_new_one():
    parent = "import math\n\n\ndef upright(angle):\n    return math.cos(angle)\n\n\n" + ENTRY + "    return upright(0.0), {}\n"
    new = "import math\n\n\ndef upright(angle):\n    return math.exp(-abs(angle))\n\n\n" + ENTRY + \
          "    return upright(next_obs['rooty_angle']), {}\n"
    quoted = "def upright(angle):\n    return math.cos(angle)\n"
    found = extract_program(f"```python\n{new}```\nThe old helper was:\n```python\n{quoted}```\n", known=[parent])
    assert found.code == new


def test_novelty_is_zero_for_exact_and_abridged_quotes_and_positive_for_a_one_number_edit():
    from bird.reward.sources import novelty, python_source

    parent = python_source("p", "def f(x):\n    '''doc'''\n    a = x + 1\n    b = a * 2\n    return a + b\n")
    abridged = python_source("q", "def f(x):\n    a = x + 1  # same\n    ...\n    return a + b\n")
    edited = python_source("e", "def f(x):\n    '''doc'''\n    a = x + 1\n    b = a * 3\n    return a + b\n")
    assert novelty(parent, parent) == 0.0 and novelty(abridged, parent) == 0.0
    assert 0.0 < novelty(edited, parent) < 0.1


def test_thinking_spans_keep_the_answers_line_numbers():
    from bird.llm.visible import visible

    shown = visible("<think>\na\nb\n</think>\nx\n<thinking>y")
    assert shown.text.split("\n") == ["", "", "", "", "x", ""] and shown.thinking == ("<think>\na\nb\n</think>",
                                                                                      "<thinking>y")
    assert shown.notes[1].endswith("(never closed)")


def test_content_parts_of_each_kind_are_read_by_kind():
    from bird.llm.content import from_openai_message, read_parts

    got = from_openai_message({"content": [{"type": "text", "text": "a"}, {"type": "refusal", "refusal": "no"},
                                           {"type": "image_url", "image_url": {}}, "b"],
                               "reasoning_content": "hmm", "tool_calls": [{"function": {"name": "t", "arguments": "{}"}}]})
    assert (got.text, got.thinking, got.refusal) == ("a\nb", "hmm", "no")
    assert got.tool_calls == ({"name": "t", "arguments": "{}"},) and "type 'image_url'" in got.set_aside[0]
    assert from_openai_message({"content": 7}).set_aside == ("message content of type int set aside: not text or a "
                                                             "list of parts",)
    assert read_parts([{"type": "thinking", "thinking": "t"}, {"type": "text", "text": "x"}]).thinking == "t"
