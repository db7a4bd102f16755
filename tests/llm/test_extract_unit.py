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
