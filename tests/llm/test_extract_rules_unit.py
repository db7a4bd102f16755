"""Program extraction (bird/reward/extract.py) rule by rule, on answers where following the rule and breaking it give
different programs: which names a program binds itself (never pulled from other blocks), which later definition of a
helper wins, where pulled-in imports and definitions go, and what the answer is told when no program is found (the
corpus of real answers: test_answer_corpus.py)."""

from __future__ import annotations

import json

from bird.reward.extract import extract_program, read_source
from bird.reward.sources import python_source

ENTRY = "def compute_reward(obs, action, next_obs, info):\n"


def _blocks(*bodies: str, prose: str = "") -> str:
    return prose + "".join(f"```python\n{b}```\nThen:\n" for b in bodies)


def _code(*bodies: str, **kwargs) -> str:
    found = extract_program(_blocks(*bodies), **kwargs)
    assert found.code is not None, found.problem
    return found.code


# --- names a program binds itself are never taken from other blocks -------------------------------------------
def test_a_local_variable_is_not_taken_from_another_blocks_constant():
    main = ENTRY + "    scale = 2.0\n    import math\n    return scale * math.pi, {}\n"
    assert _code(main, "scale = 5.0\n") == main


def test_a_nested_function_is_not_taken_from_another_blocks_helper():
    main = ENTRY + "    def inner(v):\n        return v\n    return inner(next_obs['x']), {}\n"
    assert _code(main, "def inner(v):\n    return -v\n") == main


def test_arguments_and_lambda_arguments_are_not_taken_from_other_blocks():
    main = ENTRY + "    f = lambda gain: gain * 2\n    return f(next_obs['x']), {}\n"
    assert _code(main, "gain = 3\nobs = None\n") == main


def test_names_an_import_binds_are_not_taken_from_other_blocks():
    main = ENTRY + "    import os.path\n    import numpy as np\n    return np.tanh(len(os.path.sep)), {}\n"
    assert _code(main, "import os\nimport jax.numpy as np\n") == main


def test_an_exception_name_is_not_taken_from_another_block():
    main = ENTRY + "    try:\n        r = next_obs['x']\n    except KeyError as err:\n        r = len(str(err))\n" \
                   "    return r, {}\n"
    assert _code(main, "err = 0\n") == main


# --- the latest definition of a helper ------------------------------------------------------------------------
FIRST = "import math\n\n\ndef upright(a):\n    return math.cos(a)\n\n\n" + ENTRY + "    return upright(next_obs['a']), {}\n"


def test_the_latest_of_several_later_definitions_wins_and_the_note_names_each_swap():
    v2, v3 = "def upright(a):\n    return math.sin(a)\n", "def upright(a):\n    return math.exp(-abs(a))\n"
    found = extract_program(_blocks(FIRST, v2, v3))
    assert "return math.exp(-abs(a))" in found.code and "math.sin" not in found.code and "math.cos" not in found.code
    assert found.notes[-1] == "took the latest definition of upright from block 3 (```python, lines 19-20)"


def test_a_later_block_reverting_a_helper_to_the_chosen_programs_version_keeps_that_version():
    v2, v1 = "def upright(a):\n    return math.sin(a)\n", "def upright(a):\n    return math.cos(a)\n"
    found = extract_program(_blocks(FIRST, v2, v1))  # drafted, revised, then reverted: the answer's last word is cos
    assert found.code == FIRST and not any("latest definition" in n for n in found.notes)


def test_a_revision_is_found_behind_a_later_block_that_does_not_define_the_helper():
    v2, unrelated = "def upright(a):\n    return math.sin(a)\n", "def spare(v):\n    return -v\n"
    found = extract_program(_blocks(FIRST, v2, unrelated))
    assert "return math.sin(a)" in found.code and "math.cos" not in found.code


def test_two_helpers_revised_later_are_both_swapped_keeping_the_program_whole():
    main = ("import math\n\n\ndef upright(a):\n    return math.cos(a)\n\n\ndef speed(v):\n    return v\n\n\n" + ENTRY
            + "    return upright(next_obs['a']) + speed(next_obs['v']), {}\n")
    fix = "def upright(a):\n    # longer now\n    c = math.exp(-abs(a))\n    return c\n\n\ndef speed(v):\n    return 2 * v\n"
    found = extract_program(_blocks(main, fix))
    assert found.code == ("import math\n\n\ndef upright(a):\n    # longer now\n    c = math.exp(-abs(a))\n    return c\n"
                          "\n\ndef speed(v):\n    return 2 * v\n\n\n" + ENTRY
                          + "    return upright(next_obs['a']) + speed(next_obs['v']), {}\n")
    assert found.notes[-1] == ("took the latest definition of upright from block 2 (```python, lines 18-25), speed from "
                               "block 2 (```python, lines 18-25)")


def test_a_helper_the_program_does_not_read_is_left_as_it_is_and_the_next_one_still_revised():
    main = ("def spare(v):\n    return v\n\n\ndef upright(a):\n    return a\n\n\n" + ENTRY
            + "    return upright(next_obs['a']), {}\n")
    later = "def spare(v):\n    return -v\n\n\ndef upright(a):\n    return -a\n"
    code = _code(main, later)
    assert "def spare(v):\n    return v\n" in code and "def upright(a):\n    return -a\n" in code


def test_a_later_excerpt_of_a_helper_is_not_taken():
    excerpt = "def upright(a):\n    ...\n"
    assert _code(FIRST, excerpt) == FIRST


def test_a_decorated_helper_is_replaced_with_its_decorator():
    main = ("import functools\n\n\n@functools.lru_cache\ndef upright(a):\n    return a\n\n\n" + ENTRY
            + "    return upright(next_obs['a']), {}\n")
    code = _code(main, "def upright(a):\n    return -a\n")
    assert "lru_cache" not in code.split("import functools")[1] and "def upright(a):\n    return -a\n" in code


def test_a_helper_in_another_field_of_the_same_json_object_is_not_a_later_version():
    program = FIRST
    answer = json.dumps({"reward_function": program, "helper": "def upright(a):\n    return math.sin(a)\n"})
    found = extract_program(answer)
    assert found.code == program


# --- pulling in what the program lacks ------------------------------------------------------------------------
def test_a_complete_helper_is_taken_from_a_block_that_elides_other_code():
    main = ENTRY + "    return upright(next_obs['a']), {}\n"
    helper_block = "def upright(a):\n    return -a\n\n# ... rest unchanged\n"
    assert _code(helper_block, main) == "def upright(a):\n    return -a\n\n" + main


def test_pulled_imports_go_after_the_programs_docstring_and_imports():
    main = '"""My reward."""\nimport math\n' + ENTRY + "    return np.tanh(math.pi), {}\n"
    assert _code("import numpy as np\n", main) == ('"""My reward."""\nimport math\nimport numpy as np\n\n' + ENTRY
                                                   + "    return np.tanh(math.pi), {}\n")


def test_pulled_definitions_keep_the_answers_order():
    main = ENTRY + "    return zeta(1) + alpha(2), {}\n"
    found = extract_program(_blocks("def zeta(v):\n    return v\n", "def alpha(v):\n    return -v\n", main))
    assert found.code == "def zeta(v):\n    return v\n\ndef alpha(v):\n    return -v\n\n" + main
    assert found.notes[-1] == "added from the other blocks or the parent: zeta, alpha"


def test_a_string_that_is_not_the_first_statement_is_not_a_docstring():
    main = "import math\n'not a docstring'\n" + ENTRY + "    return np.tanh(math.pi), {}\n"
    code = _code("import numpy as np\n", main)
    assert code.startswith("import math\nimport numpy as np\n\n'not a docstring'\n")


# --- why there is no program ------------------------------------------------------------------------------------
def test_a_block_that_defines_other_things_is_named_with_what_it_defines_in_block_order():
    answer = ("```python\nclass Helper:\n    def f(self):\n        return 1\n\ndef other():\n    return 2\n```\n"
              "```bash\nls\n```\n")
    assert extract_program(answer).problem == (
        "no block defines a top-level compute_reward; saw 2 block(s): block 1 (```python, lines 2-7): defines Helper, "
        "other, not compute_reward; block 2 (```bash, lines 10-10): tagged 'bash', not Python")


def test_at_most_six_names_are_listed_and_constants_are_left_out():
    body = "".join(f"def f{i}():\n    return {i}\n\n" for i in range(8)) + "LIMIT = 3\n"
    assert extract_program(_blocks(body)).problem.endswith("defines f0, f1, f2, f3, f4, f5, not compute_reward")


def test_a_block_that_defines_nothing_and_an_entry_inside_a_class_are_told_apart():
    assert extract_program(_blocks("print(1)\n")).problem.endswith(": no definition of compute_reward")
    nested = "class R:\n    def helper(self):\n        return 0\n    def compute_reward(self, o, a, n, i):\n        return 0\n"
    assert extract_program(_blocks(nested)).problem.endswith(
        ": compute_reward is a method of class R; define it at the top level")
    plain_class = "class Reward:\n    def helper(self):\n        return 0\n"
    assert extract_program(_blocks(plain_class)).problem.endswith(": defines Reward, not compute_reward")


def test_an_answer_without_blocks_names_its_json_fields():
    problem = extract_program(json.dumps({"code": "def f():\n    return 1\n"})).problem
    assert problem == ("no program defines a top-level compute_reward: JSON field 'code' (the answer): defines f, not "
                       "compute_reward")


def test_several_json_fields_are_named_in_their_order():
    answer = "```json\n" + json.dumps({"a": "def f():\n    return 1\n", "b": "def g():\n    return 2\n"}) + "\n```\n"
    problem = extract_program(answer).problem
    assert problem.index("JSON field 'a'") < problem.index("JSON field 'b'") and "; JSON field 'b'" in problem


# --- a program given whole (a tool call's argument) -----------------------------------------------------------
def test_a_program_given_whole_is_its_text_unless_it_lacks_the_entry_or_leaves_code_out():
    good = python_source("the argument", ENTRY + "    return 1.0, {}\n")
    assert read_source(good, "compute_reward") == (ENTRY + "    return 1.0, {}\n", "")
    assert read_source(python_source("the argument", "def f():\n    return 1\n"), "compute_reward") == (
        None, "the argument: defines f, not compute_reward")
    assert read_source(python_source("arg", ENTRY + "    ...\n"), "compute_reward") == (
        None, "arg: it leaves code out (line 2: `...`); give the whole program")
    broken = ENTRY + "    return (\n"
    assert read_source(python_source("arg", broken), "compute_reward") == (broken, "")  # verify names the error


def test_what_no_block_holds_is_told_in_answer_order_json_fields_as_written():
    answer = ("```bash\nls\n```\n```json\n" + json.dumps({"b": "def g():\n    return 2\n", "a": "def f():\n    return 1\n"})
              + "\n```\n```python\nprint(1)\n```\n")
    problem = extract_program(answer).problem
    parts = problem.split(": ", 1)[1].split("; ")
    assert [p.split(" (")[0] for p in parts] == ["block 1", "JSON field 'b'", "JSON field 'a'", "block 3"], problem


def test_extract_code_reads_the_program_of_the_named_entry_or_compute_reward():
    from bird.reward.extract import extract_code

    progress = "def progress(obs):\n    return 0.5\n"
    answer = _blocks(progress, ENTRY + "    return 1.0, {}\n")
    assert extract_code(answer) == ENTRY + "    return 1.0, {}\n"
    assert extract_code(answer, "progress") == progress
    assert extract_code("no code here", "progress") is None


def test_a_missing_helper_comes_from_the_latest_earlier_block_that_defines_it():
    main = ENTRY + "    return helper(next_obs['x']), {}\n"
    found = extract_program(_blocks("def helper(v):\n    return v\n", "def helper(v):\n    return -v\n", main))
    assert found.code == "def helper(v):\n    return -v\n\n" + main


def test_trailing_spaces_and_edge_characters_of_the_program_are_kept_around_pulled_parts():
    lead, body = "from math import pi as X  \n", ENTRY + "    return helper(X), {}\n"
    code = _code("def helper(v):\n    return v\n", lead + body)
    assert code == "from math import pi as X  \n\ndef helper(v):\n    return v\n\n" + body
    code = _code("def helper(v):\n    return v\n", "from math import pi as X\n" + body)
    assert code == "from math import pi as X\n\ndef helper(v):\n    return v\n\n" + body
    spaced = ENTRY + "    return helper(1.0), {}  "  # a JSON field keeps its last line's spaces (a block does not)
    found = extract_program(json.dumps({"reward": spaced, "helper": "def helper(v):\n    return v\n"}))
    assert found.code == "def helper(v):\n    return v\n\n" + spaced + "\n"
    first = "X = 2\n" + ENTRY + "    return helper(X), {}\n"
    assert _code("def helper(v):\n    return v\n", first) == "def helper(v):\n    return v\n\n" + first


def test_a_program_whose_parts_would_not_parse_once_put_together_is_kept_as_written():
    # the import shares its line with the start of a longer statement: imports added after it would fall inside it
    main = "import math; X = (\n    1)\n" + ENTRY + "    return np.tanh(X), {}\n"
    found = extract_program(_blocks("import numpy as np\n", main))
    assert found.code == main and not any("added from" in n for n in found.notes)


def test_the_entry_itself_is_never_taken_from_a_later_excerpt():
    main = ENTRY + "    return 1.0, {}\n\n\nREWARD = compute_reward\n"
    excerpt = ENTRY + "    return 2.0, {}\n\n# ... rest unchanged\n"
    assert _code(main, excerpt) == main


def test_an_empty_answer_and_one_of_only_thinking_are_told_apart_with_the_thinking_noted():
    assert extract_program(" \n\t").problem == "the answer is empty"
    only = extract_program("<think>\ndef compute_reward(o, a, n, i):\n    return 1.0, {}\n</think>\n")
    assert (only.code, only.problem) == (None, "the answer holds only thinking (set aside: thinking is never code)")
    assert only.notes == ("thinking set aside: lines 1-4",)


def test_a_statement_binding_several_names_is_revised_only_by_one_binding_them_all():
    """`A, B = 1, 2` revised later as `A = 5` alone would leave B undefined: kept as written; revised as a whole, it is
    replaced once."""
    main = "A, B = 1, 2\n\n" + ENTRY + "    return A + B, {}\n"
    assert _code(main, "A = 5\n") == main
    found = extract_program(_blocks(main, "A, B = (\n    5, 6)\n"))
    assert found.code == "A, B = (\n    5, 6)\n\n" + ENTRY + "    return A + B, {}\n"
    assert found.notes[-1].startswith("took the latest definition of A from block 2") and "B from" not in found.notes[-1]


def test_a_contracts_json_field_is_the_only_one_read():
    ours, other = ENTRY + "    return 1.0, {}\n", ENTRY + "    return -1.0, {}\n"
    answer = json.dumps({"reward_class_code": ours, "draft": other})
    assert extract_program(answer, json_key="reward_class_code").code == ours
    assert extract_program(answer).code is None  # two fields of one object: alternatives, no guess


def test_an_answer_without_a_program_keeps_what_was_set_aside_in_its_notes():
    found = extract_program("<think>hmm</think>\n```python\nprint(1)\n```\n")
    assert found.code is None and found.notes == ("thinking set aside: lines 1-1",)


def test_alternatives_are_named_and_no_program_is_chosen():
    found = extract_program("Two alternatives:\n" + _blocks(ENTRY + "    return 1.0, {}\n",
                                                           ENTRY + "    return -next_obs['x'], {}\n"))
    assert found.code is None and found.ambiguous == ("block 1 (```python, lines 3-4)", "block 2 (```python, lines 8-9)")
    assert found.problem == ("the answer offers 2 different complete programs as alternatives: block 1 (```python, "
                             "lines 3-4), block 2 (```python, lines 8-9); bird does not guess which one is meant")


def test_the_note_names_the_chosen_candidate_and_why_each_other_was_set_aside():
    found = extract_program(_blocks(ENTRY + "    return 1.0, {}\n", ENTRY + "    ...\n", ENTRY + "    return 2.0, {}\n"))
    assert found.notes == ("took block 3 (```python, lines 12-13) of 3 defining compute_reward; set aside block 1 "
                           "(```python, lines 2-3): an earlier version; block 2 (```python, lines 7-8): it leaves code "
                           "out (line 2: `...`); give the whole program",)
    assert extract_program(_blocks(ENTRY + "    return 2.0, {}\n")).notes == ()


def test_a_quote_is_not_made_new_by_a_later_excerpt_of_the_entry():
    parent = ENTRY + "    return 1.0, {}\n\n\nREWARD = compute_reward\n"
    excerpt = ENTRY + "    return 2.0, {}\n\n# ... rest unchanged\n"
    found = extract_program("<think>x</think>\n" + _blocks(parent, excerpt), known=[parent])
    assert found.code is None and found.notes == ("thinking set aside: lines 1-1",)
    assert found.problem == (
        "no new complete program defines compute_reward: block 1 (```python, lines 3-7): it repeats a program the "
        "prompt showed (the parent's code: it adds nothing to it); block 2 (```python, lines 11-14): it leaves code out "
        "(line 4: `# ... rest unchanged`); give the whole program")


def test_an_answer_that_is_all_code_is_the_program_and_the_note_says_so():
    found = extract_program(ENTRY + "    return 1.0, {}\n")
    assert found.code == ENTRY + "    return 1.0, {}\n"
    assert found.notes == ("the whole answer is the program (no fenced block)",)
