"""One pair per rule of bird/reward/static.py: a harmless program the rule must accept next to the harmful one it
must refuse. Each harmless program sits just outside the rule (what a wider rule would wrongly catch: writes to a
local `info`, `nonlocal`, `__future__`, `numpy.typing`, functools' pure helpers...), each harmful one just inside
it, so removing a rule fails its harmful half and widening it fails its harmless half."""

from __future__ import annotations

import pytest

from bird.reward.static import check_source
from bird.types import FailureKind

HEAD = "import numpy as np\n\ndef compute_reward(obs, action, next_obs, info):\n"
RET = "    return x, {}\n"


def prog(*lines: str, top: str = "") -> str:
    """A compute_reward whose body is `lines` and which returns x (x = next_obs['x'] unless the body binds it)."""
    return top + HEAD + "    x = next_obs['x']\n" + "".join(f"    {ln}\n" for ln in lines) + RET


REWARD_CLASS = "class Reward:\n    def __init__(self, extra_info=None):\n        self.n = 0\n\n    def reward_fn(self, state):\n" \
               "        return float(state['x'])\n"
PROGRESS = "plan_list = ['reach', 'push']\n\ndef determine_subtask(obs):\n    return 0\n\ndef progress(obs):\n" \
           "    return float(obs['x'])\n"
WEIGHTED = "REWARD_WEIGHTS = {'x': 1.0}\n\n" + HEAD + "    return {'x': next_obs['x']}\n"

# rule -> (harmless program, harmful program, words of the refusal, contract)
PAIRS: dict[str, tuple[str, str, str, str]] = {
    "imports outside the allowed modules": (
        prog(top="import math\nimport numpy.typing as npt\nimport functools\n"), prog(top="import scipy\n"),
        "import of 'scipy' is not allowed (allowed: [", "compute_reward"),
    "a known module's reason, with the allowed ones": (
        prog(top="import numpy.linalg as la\n"), prog(top="import os\n"),
        "import of 'os' would give access to processes (allowed: [", "compute_reward"),
    "submodules of an allowed module": (
        prog(top="import numpy.fft\nimport numpy.typing\n"), prog(top="import numpy.lib\n"),
        "import of 'numpy.lib': exposes numpy internals", "compute_reward"),
    "relative imports": (
        prog(top="from numpy import linalg\n"), prog(top="from . import linalg\n"),
        "relative imports are not allowed", "compute_reward"),
    "__future__ features only": (
        prog(top="from __future__ import annotations\n"), prog(top="from __future__ import barry_as_FLUFL\n"),
        "'from __future__ import barry_as_FLUFL' is not a known feature", "compute_reward"),
    "star imports": (
        prog(top="from numpy import pi, linalg as L\n"), prog(top="from numpy import *\n"),
        "'from numpy import *' is not allowed", "compute_reward"),
    "from-imports of a hidden name": (
        prog(top="from numpy import linalg, clip\nfrom functools import reduce, partial\n"),
        prog(top="from functools import wraps\n"),
        "'from functools import wraps': 'wraps' reads and writes attributes named by strings", "compute_reward"),
    "from-imports of a file or ctypes name": (
        prog(top="from math import dist, tau\nfrom numpy import fromiter\n"), prog(top="from math import tofile\n"),
        "'from math import tofile': 'tofile' reads or writes files", "compute_reward"),
    "private and dunder attributes": (
        prog("y = np.random.default_rng(0).normal(size=x.shape)", "x = x + y.max_"),
        prog("y = x._data"), "attribute '_data' starts with an underscore", "compute_reward"),
    "interpreter internals": (
        prog("y = x.flatten().tolist()", "z = x.cumsum().tobytes()", "w = x.ctype_name if False else 0"),
        prog("g = (i for i in [0])", "y = g.gi_frame"), "attribute 'gi_frame' reaches interpreter internals",
        "compute_reward"),
    "numpy's file and raw-memory attributes": (
        prog("y = x.tolist()", "z = x.dumps_count if False else 0"), prog("x.tofile('f')"),
        "'.tofile' reads or writes files", "compute_reward"),
    "a module's hidden names": (
        prog("y = np.linalg.norm(x) + np.clip(x, 0, 1)"), prog("np.seterrcall(print)"),
        "'numpy.seterrcall' changes the worker's numpy configuration", "compute_reward"),
    "monkeypatching a module": (
        prog("y = x.copy()", "y.shape = (len(x),)", "np_local = x", "np_local.flags.writeable = True"),
        prog("np.pi = 3.0"), "assigns to 'numpy.pi': monkeypatching a module is not allowed", "compute_reward"),
    "format fields that read attributes": (
        prog("s = '{} {0} {name!r:>{width}}'.format(1, name=2, width=3)"), prog("s = '{0.real}'.format(x)"),
        "format field '0.real' reads attributes or items", "compute_reward"),
    "format templates that are not literals": (
        prog("s = 'total {}'.format(1)", "t = f'{x}'"), prog("t = 'total {}'", "s = t.format(1)"),
        "'.format' on a template that is not a string literal", "compute_reward"),
    "reads of the success flag": (
        prog("info['success'] = x > 0", "info['is_success'] = 1.0", "y = info['height']"),
        prog("y = info['is_success']"), "reads the success flag (info['is_success'])", "compute_reward"),
    "reads of the reference reward": (
        prog("info = {}", "info['reward_forward'] = x", "del info['reward_forward']", "y = info.get('height')"),
        prog("y = info['reward_ctrl']"), "reads the reference reward (info['reward_ctrl'])", "compute_reward"),
    "reads of info through a method": (
        prog("params = {'success': 1}", "y = params.get('success')", "z = info.get('height', 0)"),
        prog("y = info.get('success', 0)"), "reads the success flag (info['success'])", "compute_reward"),
    "dangerous builtins": (
        prog("y = abs(min(x.min(), 0)) + len(x) + sum([1]) + float(round(1.5))"), prog("y = getattr(x, 'real')"),
        "'getattr' reads attributes dynamically", "compute_reward"),
    "dunder names": (
        prog("y = __name__"), prog("y = __builtins__"), "dunder name '__builtins__' is not allowed", "compute_reward"),
    "underscore names the program does not bind": (
        "def _scale(v):\n    return 0.5 * v\n\n" + prog("_y = _scale(x)", "x = _y"), prog("y = _secret"),
        "name '_secret' starts with an underscore and is not defined by the program", "compute_reward"),
    "dunder definitions": (
        "class Box:\n    def __init__(self, v):\n        self.v = v\n\n" + prog("b = Box(x)", "x = b.v"),
        "class Box:\n    def __float__(self):\n        return 0.0\n\n" + prog(),
        "defining dunder '__float__' is not allowed", "compute_reward"),
    "dunder argument names": (
        "def _f(_v, *_rest):\n    return _v\n\n" + prog("x = _f(x)"), "def f(__v):\n    return __v\n\n" + prog(),
        "dunder argument name '__v' is not allowed", "compute_reward"),
    "pattern attributes": (
        "class Box:\n    def __init__(self, v):\n        self.v = v\n\n" + prog("match Box(x):", "    case Box(v=v):",
                                                                            "        x = v"),
        prog("match x:", "    case object(f_globals=g):", "        pass"),
        "attribute 'f_globals' reaches interpreter internals", "compute_reward"),
    "global state": (
        prog("total = 0.0", "def add(v):", "    nonlocal total", "    total = total + v", "add(1.0)"),
        prog("global G"), "global state is not allowed", "compute_reward"),
}

# rule -> (harmless program, harmful program, words of the failure, contract, failure kind)
SHAPES: dict[str, tuple[str, str, str, str, FailureKind]] = {
    "the entry point's arguments": (
        HEAD.replace("info)", "info, scale=1.0)") + "    return next_obs['x'] * scale, {}\n",
        HEAD.replace("(obs,", "(self, obs,") + "    return next_obs['x'], {}\n", "remove `self`", "compute_reward",
        FailureKind.BAD_SIGNATURE),
    "the entry point's name": (
        "def compute_reward_terms(obs):\n    return {}\n\n" + prog(), prog().replace("def compute_reward(", "def reward("),
        "no top-level function 'compute_reward'", "compute_reward", FailureKind.BAD_SIGNATURE),
    "the reward class": (
        REWARD_CLASS, REWARD_CLASS.replace("reward_fn", "reward"), "class Reward needs a method reward_fn(self, state)",
        "reward_class", FailureKind.BAD_SIGNATURE),
    "the progress program": (
        PROGRESS.replace("plan_list =", "PLAN_LIST ="), PROGRESS.replace("plan_list =", "plans ="),
        "no top-level plan_list = [...]", "progress_program", FailureKind.BAD_SIGNATURE),
    "the component weights": (
        WEIGHTED.replace("REWARD_WEIGHTS =", "REWARD_WEIGHTS: dict ="), WEIGHTED.replace("REWARD_WEIGHTS =", "WEIGHTS ="),
        "no top-level REWARD_WEIGHTS", "weighted_components", FailureKind.BAD_SIGNATURE),
    "the program parses": (
        prog(), prog().replace("return x, {}", "return x, {"), "line ", "compute_reward", FailureKind.COMPILE_ERROR),
}
_ENTRY = {"compute_reward": "compute_reward", "reward_class": "Reward", "progress_program": "progress",
          "weighted_components": "compute_reward"}


@pytest.mark.parametrize("rule", sorted(PAIRS))
def test_each_rule_accepts_its_harmless_program_and_refuses_its_harmful_one(rule):
    harmless, harmful, words, contract = PAIRS[rule]
    assert check_source(harmless, _ENTRY[contract], contract=contract) is None, harmless
    failure = check_source(harmful, _ENTRY[contract], contract=contract)
    assert failure is not None and failure.kind == FailureKind.REJECTED, harmful
    assert words in failure.reason


@pytest.mark.parametrize("rule", sorted(SHAPES))
def test_each_shape_rule_accepts_its_harmless_program_and_refuses_its_harmful_one(rule):
    harmless, harmful, words, contract, kind = SHAPES[rule]
    assert check_source(harmless, _ENTRY[contract], contract=contract) is None, harmless
    failure = check_source(harmful, _ENTRY[contract], contract=contract)
    assert failure is not None and failure.kind == kind, harmful
    assert words in failure.reason
