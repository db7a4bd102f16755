"""The static checks (bird/reward/static.py), message by message: every rule on a known-bad program with the exact
reason and line a user sees, and the nearest clean program, which must pass. (tests/security/test_static_controls.py
holds one positive control per attack class; this file pins each rule's wording, line numbers and edge cases.)"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from bird.reward import static
from bird.reward.static import ALLOWED_IMPORTS, check_source
from bird.types import FailureKind

HEAD = "def compute_reward(obs, action, next_obs, info):\n"
RET = "    return 0.0, {}\n"
ALLOWED = "['functools', 'math', 'numpy', 'numpy.emath', 'numpy.exceptions', 'numpy.fft', 'numpy.linalg', " \
          "'numpy.polynomial', 'numpy.random', 'numpy.typing', 'typing']"


def body(*lines: str, top: str = "") -> str:
    """A program whose function body is `lines` (the function starts on line top.count('\n') + 1)."""
    return top + HEAD + "".join(f"    {ln}\n" for ln in lines) + RET


def rejected(code: str, **kw) -> str:
    failure = check_source(code, **kw)
    assert failure is not None, "accepted"
    assert failure.kind == FailureKind.REJECTED, failure
    return failure.reason


REJECTED = [
    # imports
    ("import os\n" + body(), f"line 1: import of 'os' would give access to processes (allowed: {ALLOWED})"),
    ("import os.path\n" + body(), f"line 1: import of 'os' would give access to processes (allowed: {ALLOWED})"),
    ("import pathlib\n" + body(), f"line 1: import of 'pathlib' would give access to files (allowed: {ALLOWED})"),
    ("import socket\n" + body(), f"line 1: import of 'socket' would give access to the network (allowed: "
                                   f"{ALLOWED})"),
    ("import math, string\n" + body(), "line 1: import of 'string' would give access to "
                                                 f"attributes by name (as getattr does) (allowed: {ALLOWED})"),
    ("import pandas\n" + body(), f"line 1: import of 'pandas' is not allowed (allowed: {ALLOWED})"),
    ("import numpy.lib\n" + body(), "line 1: import of 'numpy.lib': exposes numpy internals (file formats, memory "
                                    "maps, ctypes)"),
    ("import numpy.polynomial.legendre\n" + body(), "line 1: import of 'numpy.polynomial.legendre': is not an "
                                                    "allowed submodule"),
    # the parent of a three-part name is the two-part module, whose own rule says why (not the top package's)
    ("import numpy.linalg._umath_linalg\n" + body(), "line 1: import of 'numpy.linalg._umath_linalg': starts with an "
                                                      "underscore (private or dunder names are not allowed)"),
    ("import numpy._core\n" + body(), "line 1: import of 'numpy._core': starts with an underscore (private or dunder "
                                      "names are not allowed)"),
    ("from os import path\n" + body(), f"line 1: import of 'os' would give access to processes (allowed: {ALLOWED})"),
    ("from . import x\n" + body(), "line 1: relative imports are not allowed"),
    ("from numpy import *\n" + body(), "line 1: 'from numpy import *' is not allowed: name what you import"),
    ("from numpy import linalg, save\n" + body(), "line 1: 'from numpy import save': 'save' reads or writes files"),
    ("from math import ctypes\n" + body(), "line 1: 'from math import ctypes': 'ctypes' reaches ctypes, compilers or "
                                           "test tools"),
    ("from math import tofile\n" + body(), "line 1: 'from math import tofile': 'tofile' reads or writes files"),
    ("from typing import sys\n" + body(), "line 1: 'from typing import sys': 'sys' is not in the allowed part of this "
                                          "module (Any, Callable, ClassVar, DefaultDict, Deque, Dict, Final, FrozenSet, "
                                          "Generator, Hashable, Iterable, Iterator, ...)"),
    # attributes
    (body("x = obs.__class__"), "line 2: attribute '__class__' starts with an underscore (private and dunder "
                                "attributes are not allowed)"),
    (body("x = obs._x"), "line 2: attribute '_x' starts with an underscore (private and dunder attributes are not "
                         "allowed)"),
    *[(body(f"x = obs.{a}"), f"line 2: attribute '{a}' reaches interpreter internals (frames, code, tracebacks, "
                              "generators)")
      for a in ("co_code", "f_back", "gi_frame", "cr_await", "ag_frame", "tb_next", "mro", "func_globals",
                "func_code", "im_func", "im_self", "with_traceback")],
    (body("x = obs.dump"), "line 2: '.dump' reads or writes files"),
    (body("x = obs.testing"), "line 2: '.testing' reaches ctypes, compilers or test tools"),
    (body("np.seterrcall(print)", top="import numpy as np\n"), "line 3: 'numpy.seterrcall' changes the worker's numpy "
                                                               "configuration"),
    (body("x = n2.lib", top="import numpy as n2\n"), "line 3: 'numpy.lib' exposes numpy internals (file formats, "
                                                     "memory maps, ctypes)"),
    (body("x = math.pi", top="import typing\ntyping.cast = 1\n"), "line 2: assigns to 'typing.cast': monkeypatching a "
                                                                  "module is not allowed"),
    (body(top="import numpy.linalg as la\nla.norm = abs\n"), "line 2: assigns to 'numpy.linalg.norm': monkeypatching "
                                                             "a module is not allowed"),
    (body(top="from numpy import linalg as L\nL.norm = abs\n"), "line 2: assigns to 'numpy.linalg.norm': "
                                                                "monkeypatching a module is not allowed"),
    (body(top="import numpy.random\nnumpy.random.seed = abs\n"), "line 2: assigns to 'numpy.random.seed': "
                                                                 "monkeypatching a module is not allowed"),
    (body("del math.pi"), "line 2: assigns to 'math.pi': monkeypatching a module is not allowed"),
    (body("x = np.linalg.tensorinv.x", "np.fft.y = 1"), "line 3: assigns to 'numpy.fft.y': monkeypatching a module "
                                                        "is not allowed"),
    # format strings
    (body("s = '{0.real}'.format(1)"), "line 2: format field '0.real' reads attributes or items (only names and "
                                       "positions)"),
    (body("s = '{a[0]}'.format_map(obs)"), "line 2: format field 'a[0]' reads attributes or items (only names and "
                                           "positions)"),
    (body("s = '{0:{1.imag}}'.format(1, 2)"), "line 2: format field '1.imag' reads attributes or items (only names "
                                              "and positions)"),
    (body("s = '{0'.format(1)"), "line 2: malformed format string (expected '}' before end of string)"),
    (body("t = '{0}'", "s = t.format(1)"), "line 3: '.format' on a template that is not a string literal is not "
                                           "allowed"),
    (body("s = b'{0}'.format_map(obs)"), "line 2: '.format_map' on a template that is not a string literal is not "
                                         "allowed"),
    # reads of the success flag and the reference reward
    (body("x = info['is_success']"), "line 2: reads the success flag (info['is_success'])"),
    (body("x = info['SUCCESS']"), "line 2: reads the success flag (info['SUCCESS'])"),
    (body("x = info.get('success_rate', 0)"), "line 2: reads the success flag (info['success_rate'])"),
    *[(body(f"x = info[{k!r}]"), f"line 2: reads the reference reward (info[{k!r}])")
      for k in ("reward_ctrl", "gt_return", "bird_episode", "Reference_Value")],
    (body("x = info.pop('reward_run')"), "line 2: reads the reference reward (info['reward_run'])"),
    # names
    *[(body(f"x = {n}"), f"line 2: {n!r} {why}") for n, why in (
        ("open", "reads or writes files"), ("exec", "runs dynamic code"), ("eval", "runs dynamic code"),
        ("compile", "runs dynamic code"), ("__import__", "imports dynamically"), ("globals", "inspects the interpreter"),
        ("locals", "inspects the interpreter"), ("vars", "inspects the interpreter"), ("dir", "inspects the interpreter"),
        ("getattr", "reads attributes dynamically"), ("setattr", "writes attributes dynamically"),
        ("delattr", "writes attributes dynamically"), ("input", "reads input"), ("breakpoint", "starts a debugger"),
        ("exit", "exits the process"), ("quit", "exits the process"), ("memoryview", "touches raw memory"))],
    (body("x = __builtins__"), "line 2: dunder name '__builtins__' is not allowed"),
    (body("x = __spec__"), "line 2: dunder name '__spec__' is not allowed"),
    (body("x = _secret"), "line 2: name '_secret' starts with an underscore and is not defined by the program"),
    ("class R:\n    def __float__(self):\n        return 0.0\n" + body(),
     "line 2: defining dunder '__float__' is not allowed (special methods run code where values are converted)"),
    ("class __R:\n    pass\n" + body(), "line 1: defining dunder '__R' is not allowed (special methods run code where "
                                      "values are converted)"),
    ("async def __aiter__():\n    pass\n" + body(), "line 1: defining dunder '__aiter__' is not allowed (special "
                                                    "methods run code where values are converted)"),
    ("def f(__x):\n    return 1\n" + body(), "line 1: dunder argument name '__x' is not allowed"),
    # pattern matching and state
    (body("match obs:", "    case object(f_globals=g):", "        pass"), "line 3: attribute 'f_globals' reaches "
                                                                         "interpreter internals (frames, code, "
                                                                         "tracebacks, generators)"),
    (body("match obs:", "    case object(_x=g):", "        pass"), "line 3: attribute '_x' starts with an underscore "
                                                                  "(private and dunder attributes are not allowed)"),
    (body("global G"), "line 2: global state is not allowed (a reward is a function of its transitions; `nonlocal` in "
                       "a nested helper is fine)"),
    ("import sys\n" + body(), "line 1: import of 'sys' would give access to the interpreter's internals (allowed: "
                              f"{ALLOWED})"),
    ("import importlib\n" + body(), f"line 1: import of 'importlib' would give access to dynamic code (allowed: {ALLOWED})"),
    ("from __future__ import annotations, barry_as_FLUFL\n" + body(), "line 1: 'from __future__ import barry_as_FLUFL' "
                                                                      "is not a known feature"),
    ("import functools\n" + body("f = functools.update_wrapper"), "line 3: 'functools.update_wrapper' reads and writes "
                                                                  "attributes named by strings (as getattr/setattr do)"),
    ("from functools import singledispatch\n" + body(), "line 1: 'from functools import singledispatch': "
                                                        "'singledispatch' evaluates type annotations (dynamic code)"),
    # dunder bindings and class machinery: each with its line (a `with` reports the statement's line, not 0)
    *[(code, f"line {line}: {what} binds the dunder name {name!r} (dunder names may not be bound: in a class body "
                                 "they define special methods)") for code, line, what, name in (
        (body("with np.errstate() as __name__:", "    pass", top="import numpy as np\n"), 3, "'with ... as'",
         "__name__"),
        ("import numpy as np\nasync def f():\n    async with np.errstate() as (a, [b, __x]):\n        pass\n"
         + body(), 3, "'with ... as'", "__x"),
        ("x = 1\nimport math as __eq__\n" + body(), 2, "an import alias", "__eq__"),
        ("x = 1\nimport __hello__.sub\n" + body(), 2, "an import", "__hello__"),
        (body("match obs:", "    case [1, *__x]:", "        pass"), 3, "a match/case star capture", "__x"))],
    *[(f"class B:\n    pass\nclass R({bases}):\n    pass\n" + body(),
       f"line 3: class 'R' passes {what} to class creation (metaclasses and class keywords run code that builds the "
       "class; not allowed)") for bases, what in (("metaclass=type", "metaclass="), ("B, flag=1", "flag="),
                                                   ("**{}", "**"))],
    ("import typing\nclass R:\n    pass\ntyping.Sequence.register(R)\n" + body(),
     "line 4: '.register' registers a class with an ABC (ABC.register: isinstance checks in trusted code then trust "
     "it) or a handler with a dispatcher; not allowed"),
    (body("match obs:", "    case object(register=r):", "        pass"),
     "line 3: '.register' registers a class with an ABC (ABC.register: isinstance checks in trusted code then trust "
     "it) or a handler with a dispatcher; not allowed"),
    ("import numpy.typing as npt\n" + body("x = npt.NBitBase.x", "y = npt.mypy_plugin"),
     "line 4: 'numpy.typing.mypy_plugin' is not in the allowed part of this module (ArrayLike, DTypeLike, NBitBase, "
     "NDArray, ...)"),
]


@pytest.mark.parametrize("code, reason", REJECTED, ids=[r for _, r in REJECTED])
def test_each_rule_rejects_with_its_reason_and_line(code, reason):
    assert rejected(code) == reason


ACCEPTED = {
    "allowed imports, aliased and dotted": body(top="import math\nimport numpy as n2\nimport numpy.linalg as la\n"
                                                     "import numpy.random\nfrom numpy import linalg, fft as F\n"
                                                     "from typing import Dict, cast\nimport typing\n"),
    "names the program binds itself": ("def _helper(_a, *_rest, **_kw):\n    return _a\n\nclass _Box:\n    pass\n\n"
                                       + body("_x = _helper(1)", "for _i in range(2):", "    del _x",
                                              "    _x = _i", "try:", "    pass", "except ValueError as _e:",
                                              "    _y = _e", "match obs:", "    case [_p, *_q]:", "        _z = _p + _q",
                                              "    case {'k': _v, **_others}:", "        _z = _v",
                                              "g = lambda _l: _l", "_w = [_c for _c in range(2)]")),
    "the main guard and a constructor": "class K:\n    def __init__(self, extra=None):\n        self.extra = extra\n"
                                        + body() + "if __name__ == '__main__':\n    pass\n",
    "known __future__ features": "from __future__ import annotations, division\n" + body(),
    "plain formats": body("s = '{} {0} {name!r:>{width}}'.format(1, name=2, width=3)", "t = '{a}'.format_map(obs)",
                          "u = f'{obs}'"),
    "info reads that are neither": body("x = info['obs_scale']", "y = info.get(obs)", "z = info[obs]",
                                        "w = other['success']", "v = info.get()"),
    "module attributes that are offered": body("x = np.linalg.norm(obs) + math.pi + np.random.default_rng(0).normal()",
                                               "np_local = obs.copy()", "np_local.shape = (1,)", top="import numpy as np\n"),
    "attributes of the program's own objects": "class Box:\n    pass\n" + body("b = Box()", "b.value = 1", "del b.value",
                                                                              "match b:", "    case Box(value=v):",
                                                                              "        pass"),
}


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_the_nearest_clean_programs_pass(name):
    assert check_source(ACCEPTED[name]) is None


def test_a_syntax_error_is_a_compile_error_with_its_line():
    failure = check_source("x = 1\ndef compute_reward(obs:\n")
    assert failure.kind == FailureKind.COMPILE_ERROR and failure.reason.startswith("line 2: ")


@pytest.mark.parametrize("signature, n_args, ok", [
    ("obs, action, next_obs, info", 4, True),
    ("obs, action, next_obs, info, scale=1.0", 4, True),
    ("obs, action, next_obs=None, info=None", 4, True),
    ("obs, /, action, next_obs, info", 4, True),
    ("obs, *rest", 4, True),
    ("*args", 4, True),
    ("obs, action, next_obs", 4, False),
    ("obs, action, next_obs, info, extra", 4, False),
    ("obs, action", 2, True),
    ("obs", 2, False),
])
def test_the_entry_point_must_accept_the_contracts_arguments(signature, n_args, ok):
    code = f"def compute_reward({signature}):\n    return 0.0, {{}}\n"
    failure = check_source(code, n_args=n_args)
    if ok:
        assert failure is None
    else:
        names = ", ".join(("obs", "action", "next_obs", "info")[:n_args])
        got = [a for a in signature.split(", ") if a not in ("/",)]
        assert failure.kind == FailureKind.BAD_SIGNATURE
        assert failure.reason == f"compute_reward must accept ({names}); got {len(got)} positional args ({', '.join(got)})"


def test_the_entry_point_must_be_a_top_level_function_of_the_right_name():
    nested = "def outer():\n    def compute_reward(obs, action, next_obs, info):\n        return 0, {}\n"
    for code, entry in ((nested, "compute_reward"), ("compute_reward = 1\n", "compute_reward"),
                        (HEAD + RET, "shaped_reward")):
        failure = check_source(code, entry)
        assert (failure.kind, failure.reason) == (FailureKind.BAD_SIGNATURE, f"no top-level function {entry!r}")
    assert check_source(HEAD.replace("compute_reward", "shaped_reward") + RET, "shaped_reward") is None


REWARD_CLASS = "class Reward:\n    def __init__(self, extra_info=None):\n        pass\n    def reward_fn(self, state):\n" \
               "        return 0.0\n"


def test_the_reward_class_contract_needs_the_class_and_its_method():
    assert check_source(REWARD_CLASS, "Reward", contract="reward_class") is None
    cases = {
        "def Reward(state):\n    return 0.0\n": "no top-level class 'Reward'",
        "def f():\n    class Reward:\n        pass\n": "no top-level class 'Reward'",
        "class Reward:\n    def other(self, state):\n        return 0.0\n": "class Reward needs a method "
                                                                            "reward_fn(self, state)",
        "class Reward:\n    def reward_fn(self):\n        return 0.0\n": "class Reward needs a method reward_fn(self, "
                                                                          "state)",
        "class Reward:\n    reward_fn = None\n": "class Reward needs a method reward_fn(self, state)",
    }
    for code, reason in cases.items():
        failure = check_source(code, "Reward", contract="reward_class")
        assert (failure.kind, failure.reason) == (FailureKind.BAD_SIGNATURE, reason), code


PROGRESS = ("plan_list = ['reach', 'push']\n\ndef determine_subtask(obs):\n    return 0\n\n"
            "def progress(obs):\n    return 0.0\n")


def test_the_progress_contract_needs_a_plan_and_two_functions_of_the_state():
    check = lambda code: check_source(code, "progress", contract="progress_program")  # noqa: E731
    assert check(PROGRESS) is None
    assert check(PROGRESS.replace("plan_list =", "PLAN_LIST =")) is None
    assert check(PROGRESS.replace("plan_list =", "plan_list: list =")) is None
    cases = {
        PROGRESS.replace("def determine_subtask(obs)", "def determine(obs)"): "no top-level function "
                                                                              "determine_subtask(obs)",
        PROGRESS.replace("def determine_subtask(obs)", "def determine_subtask()"): "no top-level function "
                                                                                   "determine_subtask(obs)",
        PROGRESS.replace("def progress(obs)", "def progress()"): "no top-level function progress(obs)",
        PROGRESS.replace("def progress(obs)", "def phi(obs)"): "no top-level function progress(obs)",
        PROGRESS.replace("plan_list =", "plans ="): "no top-level plan_list = [...] (the subtask list)",
        PROGRESS.replace("plan_list = ['reach', 'push']", "plan_list.x = 1"): "no top-level plan_list = [...] (the "
                                                                              "subtask list)",
        "def f():\n    plan_list = []\n" + PROGRESS.replace("plan_list =", "other ="): "no top-level plan_list = "
                                                                                       "[...] (the subtask list)",
    }
    for code, reason in cases.items():
        failure = check(code)
        assert (failure.kind, failure.reason) == (FailureKind.BAD_SIGNATURE, reason), code
    assert check("def progress(obs, /):\n    return 0\n" + PROGRESS.split("\n\ndef progress")[0]) is None  # posonly


def test_defaults_are_the_compute_reward_contract_in_numpy():
    assert check_source(body(top="import numpy as np\n")) is None
    assert check_source(REWARD_CLASS).kind == FailureKind.BAD_SIGNATURE  # not the default contract
    assert check_source("def compute_reward(obs, action, next_obs):\n    return 0, {}\n").kind == \
        FailureKind.BAD_SIGNATURE  # four arguments by default
    with pytest.raises(ValueError, match="unknown reward-program language 'cobol'"):
        check_source(body(), language="cobol")
    assert frozenset(eval(ALLOWED)) == ALLOWED_IMPORTS  # noqa: S307 - the literal list above


def test_the_first_problem_in_source_order_is_reported():
    code = "import os\nimport socket\n" + body("x = open")
    assert rejected(code) == f"line 1: import of 'os' would give access to processes (allowed: {ALLOWED})"


def test_a_program_the_parser_cannot_take_is_a_compile_error():
    failure = check_source("-" * 100_000 + "1")  # the parser's stack overflows
    assert (failure.kind, failure.reason) == (FailureKind.COMPILE_ERROR, "the program cannot be parsed (MemoryError: )")
    failure = check_source(body("x = 1\0"))  # a SyntaxError without a line number: no "line None"
    assert (failure.kind, failure.reason) == (FailureKind.COMPILE_ERROR, "source code string cannot contain null bytes")


def test_a_parse_failure_reason_is_cut_to_300_characters(monkeypatch):
    def parse(code):  # no parser failure of these types has a long message: this stands in for one
        raise ValueError("v" * 1000)
    monkeypatch.setattr(static, "ast", SimpleNamespace(parse=parse))  # static's own reference, not pytest's
    failure = check_source(body())
    assert failure.kind == FailureKind.COMPILE_ERROR
    assert failure.reason == ("the program cannot be parsed (ValueError: " + "v" * 1000)[:300]


def test_the_entry_point_may_be_an_alias_of_a_top_level_function():
    fn = "def mine(obs, action, next_obs, info):\n    return 0.0, {}\n"
    two = "def two(obs, action):\n    return 0.0, {}\n"
    assert check_source(fn + "compute_reward = mine\n") is None
    assert check_source(fn + two + "compute_reward = two\ncompute_reward = mine\n") is None  # the last one counts
    assert check_source(fn + two + "compute_reward = mine\ncompute_reward = two\n").reason == \
        "compute_reward must accept (obs, action, next_obs, info); got 2 positional args (obs, action)"
    for code in (fn + "other = mine\n", fn + "compute_reward = other\nother = compute_reward\n",
                 fn + "compute_reward = np\n"):  # an unrelated alias, a cycle, an alias of no function
        failure = check_source(code)
        assert (failure.kind, failure.reason) == (FailureKind.BAD_SIGNATURE, "no top-level function 'compute_reward'")


def test_an_alias_chain_is_followed_eight_names_deep():
    def chain(hops: int) -> str:
        names = ["compute_reward"] + [f"a{i}" for i in range(1, hops + 1)]
        aliases = "".join(f"{a} = {b}\n" for a, b in zip(names, names[1:], strict=False))
        return aliases + HEAD.replace("compute_reward", names[-1]) + RET
    assert check_source(chain(7)) is None
    assert check_source(chain(8)).reason == "no top-level function 'compute_reward'"


@pytest.mark.parametrize("first", ["self", "cls"])
def test_a_method_like_entry_point_gets_the_hint_to_drop_self(first):
    failure = check_source(f"def compute_reward({first}, obs, action, next_obs, info):\n    return 0.0, {{}}\n")
    assert (failure.kind, failure.reason) == (
        FailureKind.BAD_SIGNATURE, f"compute_reward must accept (obs, action, next_obs, info); got 5 positional args "
                                   f"({first}, obs, action, next_obs, info); remove `self`: it is a top-level "
                                   "function, not a method")


WEIGHTED = "def compute_reward(obs, action, next_obs, info):\n    return {'speed': 1.0}\n"


def test_the_weighted_components_contract_needs_the_function_and_top_level_weights():
    check = lambda code: check_source(code, contract="weighted_components")  # noqa: E731
    assert check(WEIGHTED + "REWARD_WEIGHTS = {'speed': 2.0}\n") is None
    assert check("REWARD_WEIGHTS: dict = {'speed': 2.0}\n" + WEIGHTED) is None
    assert check("W = REWARD_WEIGHTS = {'speed': 2.0}\n" + WEIGHTED) is None
    missing = (FailureKind.BAD_SIGNATURE, "no top-level REWARD_WEIGHTS = {component: weight}")
    for code in (WEIGHTED, WEIGHTED + "WEIGHTS = {'speed': 2.0}\n", WEIGHTED + "x.REWARD_WEIGHTS: dict = {}\n",
                 "def f():\n    REWARD_WEIGHTS = {}\n" + WEIGHTED):
        failure = check(code)
        assert (failure.kind, failure.reason) == missing, code
    failure = check("def compute_reward(obs):\n    return {}\n")  # both missing: the signature is reported first
    assert (failure.kind, failure.reason) == (FailureKind.BAD_SIGNATURE, "compute_reward must accept (obs, action, "
                                              "next_obs, info); got 1 positional args (obs)")
    assert check_source("def score(obs, action):\n    return {}\nREWARD_WEIGHTS = {}\n", "score", 2,
                        contract="weighted_components") is None
