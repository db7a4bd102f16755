"""bird/reward/sources.py on its own: which JSON fields hold code (and how deep bird looks), what a source binds,
imports and spans, and how novelty is measured (the extraction rules built on it: test_extract_rules_unit.py)."""

from __future__ import annotations

import ast
import difflib

import pytest

from bird.reward.sources import (
    _MAX_TOKENS,
    Source,
    _code_fields,
    answer_sources,
    novelty,
    parse,
    python_source,
    shape,
)

CODE = "def f():\n    return 1"


def test_code_fields_are_strings_spanning_lines_or_defining_found_in_nested_objects_and_lists():
    value = {"outer": {"code": "x = 1\ny = 2"}, "items": ["z = 1", "class A: pass"], "short": "x = 1",
             "prose": "a definition of done", "defs": "def g(): pass", "n": 3, "padded": "\n x = 1 \n"}
    assert list(_code_fields(value)) == [("outer.code", "x = 1\ny = 2"), ("items.1", "class A: pass"),
                                         ("defs", "def g(): pass")]


def test_code_fields_are_looked_for_in_the_answers_object_and_three_levels_below_it_no_deeper():
    def nest(levels: int) -> dict:
        value: dict = {"code": CODE}
        for _ in range(levels):
            value = {"a": value}
        return value

    assert list(_code_fields(nest(3))) == [("a.a.a.code", CODE)]
    assert list(_code_fields(nest(4))) == []
    assert list(_code_fields({"a": [[{"code": CODE}]]})) == [("a.0.0.code", CODE)]
    assert list(_code_fields({"a": [[[{"code": CODE}]]]})) == []


def test_a_json_key_takes_only_that_field_when_it_holds_text_and_every_code_field_otherwise():
    answer = '{"reward": "def compute_reward():\\n    return 1", "helper": "def h():\\n    return 2"}'
    _, sources, _ = answer_sources(answer, json_key="reward")
    assert [s.label for s in sources] == ["JSON field 'reward' (the answer)"]
    _, sources, _ = answer_sources(answer, json_key="missing")
    assert [s.label for s in sources] == ["JSON field 'reward' (the answer)", "JSON field 'helper' (the answer)"]
    assert [s.order for s in sources] == [(1, 1), (1, 2)]


def test_an_untagged_block_holding_a_json_list_is_python_not_a_json_object():
    _, sources, skipped = answer_sources("```\n[1, 2]\n```")
    assert [s.text for s in sources] == ["[1, 2]"] and skipped == []


def test_imports_name_each_binding_with_its_own_one_name_import_and_leave_out_future_imports():
    src = python_source("s", "from __future__ import annotations\nimport os.path\nimport numpy as np\n"
                             "from a.b import c as d, e\nfrom . import sibling\n")
    assert src.imports() == {"os": (2, "import os.path"), "np": (3, "import numpy as np"),
                             "d": (4, "from a.b import c as d"), "e": (4, "from a.b import e"),
                             "sibling": (5, "from . import sibling")}
    assert Source("broken", "def", None).imports() == {}


def test_an_alias_defines_only_the_name_it_assigns():
    src = python_source("s", "def my_reward():\n    return 1\nother = my_reward\nobj.attr = my_reward\n")
    assert not src.defines("compute_reward") and src.defines("other") and src.defines("my_reward")


def test_a_decorated_definitions_segment_starts_at_its_first_decorator():
    src = python_source("s", "x = 1\n@first\n@second\ndef f():\n    return 1\n")
    assert src.segment(src.top()["f"]) == "@first\n@second\ndef f():\n    return 1"


def test_a_tree_that_cannot_be_unparsed_has_no_tokens_and_its_shape_is_its_dump():
    tree = ast.Module(body=[ast.Expr(ast.Name(id="1x", ctx=ast.Load()))], type_ignores=[])  # unparses to "1x"
    assert Source("odd", "1x", tree).tokens() == []
    assert Source("none", "def", None).tokens() == []
    assert shape(tree) == ast.dump(tree)


def test_a_program_that_cannot_be_measured_is_wholly_new():
    known = python_source("k", CODE)
    assert novelty(python_source("broken", "def ("), known) == 1.0
    assert novelty(known, python_source("broken", "def (")) == 1.0


def _program(tokens: int) -> Source:
    """A program of exactly `tokens` tokens (a list literal and an assignment)."""
    k = (tokens - 6) // 2
    src = python_source("big", f"a = [{', '.join(['1'] * k)}]\nb = {'1' if tokens % 2 == 0 else '-1'}")
    assert len(src.tokens()) == tokens
    return src


def test_programs_of_up_to_the_token_cap_are_measured_and_longer_ones_are_not():
    at_cap = _program(_MAX_TOKENS)
    assert novelty(at_cap, at_cap) == 0.0
    over = _program(_MAX_TOKENS + 1)
    small = python_source("small", "a = [1, 1]\nb = 1")
    assert novelty(over, small) == 1.0 and novelty(small, over) == 1.0


def test_tokens_frequent_in_a_long_program_count_as_matched_like_any_other():
    functions = [f"def f{i}(a, b):\n    return a + b * {i % 3} - (a if b else {i % 5})" for i in range(40)]
    known = python_source("k", "\n".join(functions))
    mine = python_source("m", "\n".join(reversed(functions)))
    matcher = difflib.SequenceMatcher(None, mine.tokens(), known.tokens(), autojunk=False)  # no popularity heuristic
    expected = 1.0 - sum(b.size for b in matcher.get_matching_blocks()) / len(mine.tokens())
    assert novelty(mine, known) == pytest.approx(expected) and expected < 0.95


@pytest.mark.parametrize("test", ['__name__ != "__main__"', 'mode == "__main__"', '__name__ == "__mp_main__"'])
def test_only_an_if_name_equals_main_block_is_a_harness(test):
    text = f"def f():\n    return 1\nif {test}:\n    f()"
    src = python_source("s", text)
    assert src.text == text and src.notes == []
    assert python_source("s", 'def f():\n    return 1\nif "__main__" == __name__:\n    f()').text == \
        "def f():\n    return 1"


def test_where_a_program_or_one_of_its_definitions_leaves_code_out():
    src = python_source("s", "# ...\ndef f():\n    x = 1\n    # ... rest unchanged\n    return x\n"
                             "def g():\n    return 2\n# " + "y" * 80)
    f, g = src.top()["f"], src.top()["g"]
    assert src.elision() == "line 1: `# ...`"
    assert src.elision(f) == "line 4: `# ... rest unchanged`"
    assert src.elision(g) == ""
    long = python_source("s", "x = 1\n# ... " + "z" * 80)
    assert long.elision() == f"line 2: `# ... {'z' * 54}`"  # 60 characters of the comment
    assert Source("none", "def", None).top() == {}


FENCE = "```"


def test_each_block_gives_its_sources_in_order_labelled_and_placed_and_a_json_object_without_code_is_skipped():
    answer = (f"{FENCE}python\nx = 1\n{FENCE}\n{FENCE}json\n{{\"code\": \"def f():\\n    return 1\", \"note\": \"n\"}}\n"
              f"{FENCE}\n{FENCE}\n{{\"a\": 1}}\n{FENCE}\n{FENCE}python\n{{\"code\": \"def g():\\n    return 2\"}}\n{FENCE}")
    blocks, sources, skipped = answer_sources(answer, json_key="code")
    assert [(s.label, s.order, s.group) for s in sources] == [
        (blocks[0].label(), (1, 0), 0), (f"JSON field 'code' ({blocks[1].label()})", (2, 1), 2),
        (blocks[3].label(), (4, 0), 0)]  # a python block holding a JSON object is Python
    assert skipped == [(3, f"{blocks[2].label()}: a JSON object with no code in it")]


def test_a_json_key_takes_only_that_field_in_a_json_block_too():
    answer = (f"{FENCE}json\n{{\"reward\": \"def compute_reward():\\n    return 1\", "
              f"\"helper\": \"def h():\\n    return 2\"}}\n{FENCE}")
    blocks, sources, _ = answer_sources(answer, json_key="reward")
    assert [s.label for s in sources] == [f"JSON field 'reward' ({blocks[0].label()})"]
    assert len(answer_sources(answer)[1]) == 2  # without a key, every code field


def test_a_whole_json_answer_is_one_group_labelled_as_the_answer():
    _, sources, _ = answer_sources('{"code": "def f():\\n    return 1"}')
    assert [(s.label, s.order, s.group) for s in sources] == [("JSON field 'code' (the answer)", (1, 1), 1)]


def test_a_whole_answer_keeps_its_text_but_for_blank_lines_around_it():
    assert answer_sources("\n\nX = 1  \n\n")[1][0].text == "X = 1  "


def test_the_harness_block_alone_is_dropped_with_the_imports_only_it_reads():
    text = ("X = 1\nimport json\nimport os.path\nimport sys\nfrom collections import (\n    OrderedDict,\n)\n"
            "def f():\n    return 1\nif __name__ == \"__main__\":\n    print(json.dumps(f()), os.path.sep, OrderedDict)\n"
            "y = X  ")
    src = python_source("s", text)
    assert src.text == "X = 1\nimport sys\ndef f():\n    return 1\ny = X  "
    assert src.notes == ["s: dropped the `if __name__ == \"__main__\":` harness (line 10) and the imports only it read "
                         "(json, os, OrderedDict)"]
    assert python_source("s", "def f():\n    return 1").notes == []  # no harness, nothing said
    joined = "x = 1; \\\nimport json\ndef f():\n    return x\nif __name__ == \"__main__\":\n    print(json.dumps(f()))"
    kept = python_source("s", joined)  # without the import's line, `x = 1; \` would run into `def`: kept as written
    assert (kept.text, kept.notes, kept.error) == (joined, [], "")
    bare = python_source("s", "def f():\n    return 1\nif __name__ == \"__main__\":\n    f()")
    assert bare.notes == ["s: dropped the `if __name__ == \"__main__\":` harness (line 3)"]


def test_an_answer_without_blocks_is_one_whole_source_first_in_the_answer():
    [src] = answer_sources("x = 1")[1]
    assert (src.label, src.order, src.whole, src.error) == ("the answer", (1, 0), True, "")


def test_a_program_nested_past_the_parsers_recursion_limit_does_not_parse_and_says_so():
    assert parse("x = " + "-" * 200_000 + "1") == (None, "does not parse (nested too deeply)")
    assert parse("x = 1")[1] == ""
