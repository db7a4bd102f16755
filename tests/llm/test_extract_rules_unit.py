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
