"""Positive controls for every static check (a known-bad input it must catch, with its reason) and negative controls
(the nearest clean input, which must pass): a check that never fires, or fires on clean code, fails here."""

from __future__ import annotations

import pytest

from bird.reward.static import check_source
from bird.types import FailureKind

HEAD = "import numpy as np\n\ndef compute_reward(obs, action, next_obs, info):\n"
RET = "    return next_obs['x'], {}\n"


def program(body: str = "", top: str = "") -> str:
    return top + HEAD + body + RET


BAD = {
    # imports: full dotted names, every from-imported name
    "dotted import of a private module": (program(top="import numpy._core._internal\n"), "numpy._core._internal"),
    "dotted import of numpy internals": (program(top="import numpy.lib.format\n"), "numpy.lib.format"),
    "from-import of a file function": (program(top="from numpy import savetxt\n"), "reads or writes files"),
    "from-import of a module name": (program(top="from typing import sys\n"), "'sys' is not in the allowed part"),
    "from-import of typing's evaluator": (program(top="from typing import get_type_hints\n"), "get_type_hints"),
    "from-import of a private name": (program(top="from numpy import _core\n"), "starts with an underscore"),
    "from-import of ctypeslib": (program(top="from numpy import ctypeslib\n"), "numpy internals"),
    "star import": (program(top="from math import *\n"), "import *"),
    "relative import": (program(top="from . import x\n"), "relative imports"),
    "os": (program(top="import os\n"), "processes"),
    "socket": (program(top="import socket\n"), "network"),
    # names and attributes
    "dunder attribute": (program("    x = ().__class__\n"), "starts with an underscore"),
    "private attribute": (program("    x = np._core\n"), "starts with an underscore"),
    "generator frame": (program("    g = (i for i in [0])\n    x = g.gi_frame\n"), "interpreter internals"),
    "frame globals": (program("    x = obs.f_globals\n"), "interpreter internals"),
    "traceback frame": (program("    x = obs.tb_frame\n"), "interpreter internals"),
    "code object": (program("    x = compute_reward.co_consts\n"), "interpreter internals"),
    "coroutine frame": (program("    x = obs.cr_frame\n"), "interpreter internals"),
    "dunder name": (program("    x = __builtins__\n"), "dunder name"),
    "undefined private name": (program("    x = _secret\n"), "not defined by the program"),
    "dunder method": ("class R:\n    def __float__(self):\n        return 0.0\n" + program(), "defining dunder"),
    "match-class attribute": (program("    match obs:\n        case object(gi_frame=f):\n            pass\n"),
                              "interpreter internals"),
    "module file function": (program("    np.save('x', obs['x'])\n"), "reads or writes files"),
    "ndarray.tofile": (program("    obs['x'].tofile('x')\n"), "reads or writes files"),
    "ndarray.ctypes": (program("    p = obs['x'].ctypes\n"), "ctypes"),
    "numpy.lib": (program("    x = np.lib\n"), "numpy internals"),
    "numpy configuration": (program("    np.seterrcall(print)\n"), "configuration"),
    # format strings
    "format attribute field": (program("    s = '{0.gi_frame}'.format(obs)\n"), "reads attributes or items"),
    "format index field": (program("    s = '{0[x]}'.format(obs)\n"), "reads attributes or items"),
    "format_map attribute": (program("    s = '{a.b}'.format_map(obs)\n"), "reads attributes or items"),
    "nested spec field": (program("    s = '{0:{1.x}}'.format(1, obs)\n"), "reads attributes or items"),
    "format on a non-literal": (program("    s = ('{0' + '}').format(1)\n"), "not a string literal"),
    "str.format unbound": (program("    s = str.format('{0}', 1)\n"), "not a string literal"),
    # monkeypatching
    "assign to numpy": (program(top="import numpy\nnumpy.isfinite = abs\n"), "monkeypatching"),
    "assign to a submodule": (program(top="from numpy import random\nrandom.seed = abs\n"), "monkeypatching"),
    "delete from numpy": (program("    del np.stack\n"), "monkeypatching"),
    # builtins, state, leaks
    "eval": (program("    eval('1')\n"), "dynamic code"),
    "getattr": (program("    getattr(obs, 'x')\n"), "dynamically"),
    "open": (program("    open('x')\n"), "files"),
    "global": (program("    global G\n"), "global"),
    "success flag": (program("    x = info['success']\n"), "success flag"),
    "reference reward": (program("    x = info.get('reward_run')\n"), "reference reward"),
    # dunder bindings and class machinery (issue 20: together they reached __globals__ and the real builtins)
    "match capture of a dunder": ("def f(self):\n    return 0.0\nclass R:\n    match f:\n        case __float__:\n"
                                  "            pass\n" + program(), "capture binds the dunder name '__float__'"),
    "match star capture of a dunder": (program("    match [1, 2]:\n        case [*__x]:\n            pass\n"),
                                       "star capture binds the dunder name '__x'"),
    "match rest capture of a dunder": (program("    match {}:\n        case {**__x}:\n            pass\n"),
                                       "**rest capture binds the dunder name '__x'"),
    "except as a dunder": (program("    try:\n        pass\n    except ValueError as __x:\n        pass\n"),
                           "'except ... as' binds the dunder name '__x'"),
    "with as __name__": (program("    with np.errstate() as __name__:\n        pass\n"),
                         "'with ... as' binds the dunder name '__name__'"),
    "import alias to a dunder": (program(top="import math as __eq__\n"), "import alias binds the dunder name"),
    "from-import alias to a dunder": (program(top="from math import sqrt as __float__\n"),
                                      "import alias binds the dunder name '__float__'"),
    "metaclass keyword": ("def meta(name, bases, ns):\n    return ns\nclass R(metaclass=meta):\n    pass\n" + program(),
                          "passes metaclass= to class creation"),
    "class keyword": ("class B:\n    pass\nclass R(B, flag=1):\n    pass\n" + program(), "passes flag= to class"),
    "class **kwargs": ("opts = {}\nclass R(**opts):\n    pass\n" + program(), "passes ** to class creation"),
    "ABC registration": ("import typing\nclass R:\n    pass\ntyping.Sequence.register(R)\n" + program(),
                         "'.register' registers a class with an ABC"),
    "registration through a match-class keyword": (
        program(top="import typing\n", body="    match typing.Sequence:\n        case object(register=r):\n"
                                              "            pass\n"), "'.register' registers a class with an ABC"),
}

GOOD = {
    "submodule imports": program(top="import math\nimport numpy.linalg as la\nfrom numpy.random import default_rng\n"
                                     "from typing import Dict, Tuple\n"),
    "throwaway and private helpers": "def _helper(x):\n    return x\n" + program("    for _ in range(2):\n"
                                                                                 "        pass\n    y = _helper(1)\n"),
    "main guard": program() + "if __name__ == '__main__':\n    pass\n",
    "constructor": "class Reward:\n    def __init__(self, extra_info=None):\n        self.extra_info = extra_info\n"
                   "    def reward_fn(self, state):\n        return 0.0\n",
    "plain format": program("    s = '{:.2f} {0} {name}'.format(1.0, name=2)\n    t = f'{obs}'\n"),
    "numpy maths": program("    x = np.linalg.norm(obs['v'], axis=-1) + np.fft.rfft(obs['v']).real.sum()\n"
                           "    with np.errstate(divide='ignore'):\n        y = np.where(x > 0, 1.0, 0.0)\n"),
    "attributes that look alike": program("    a = obs['x'].shape\n    b = np.float64(1).real\n"
                                          "    c = np.finfo(float).eps\n"),
    "own object attributes": "class Box:\n    pass\n" + program("    b = Box()\n    b.value = 1\n"),
    # the harmless twins of the binding and class-machinery rules
    "match captures of plain names": program("    match [1, 2]:\n        case [a, *rest]:\n            y = a\n"
                                             "        case {'k': v, **others}:\n            y = v\n"
                                             "        case int() as whole:\n            y = whole\n"),
    "except as a plain name": program("    try:\n        y = 1 / 0\n    except ZeroDivisionError as err:\n"
                                      "        y = str(err)\n"),
    "with as a plain name": program("    with np.errstate(divide='ignore') as state:\n        y = state\n"),
    "import aliases": program(top="import math as m\nfrom math import sqrt as root\nimport numpy.linalg as la\n"),
    "class with a base and no keywords": "class Base:\n    pass\nclass R(Base):\n    scale = 2.0\n" + program(),
    "isinstance against a typing ABC": program(top="import typing\n",
                                               body="    ok = isinstance(obs['x'], typing.Sequence)\n"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_static_check_catches(name):
    code, reason = BAD[name]
    failure = check_source(code, contract="reward_class" if name == "constructor" else "compute_reward")
    assert failure is not None, f"{name}: accepted"
    assert failure.kind == FailureKind.REJECTED and reason in failure.reason, failure.reason


@pytest.mark.parametrize("name", sorted(GOOD))
def test_static_check_passes_clean_code(name):
    contract = "reward_class" if name == "constructor" else "compute_reward"
    entry = "Reward" if contract == "reward_class" else "compute_reward"
    assert check_source(GOOD[name], entry, contract=contract) is None
