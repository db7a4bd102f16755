"""The worker's Python-level wall on its own (bird/reward/pywall.py): module proxies hold only the allowed public API
and cannot be patched; the import hook checks full dotted names and every from-imported name; the builtins are
restricted. Then the same through a worker with the static checks bypassed."""

from __future__ import annotations

import numpy as np
import pytest

from bird.envs.base import ObsField, ObsIndex
from bird.reward import sandbox
from bird.reward.languages import get_language
from bird.reward.pywall import namespace
from bird.reward.sandbox import RewardProgramError, SandboxedReward

INDEX = ObsIndex((ObsField("x", 0, 1, "position"),), 1)


@pytest.fixture(scope="module")
def ns():
    return namespace(get_language("numpy"))


def run(ns: dict, code: str) -> dict:
    scope = dict(ns)
    exec(compile(code, "<test>", "exec"), scope)
    return scope


@pytest.mark.parametrize("code", [
    "x = np.load", "x = np.savetxt", "x = np.memmap", "x = np.lib", "x = np.ctypeslib", "x = np.testing",
    "x = np._core", "x = np.seterrcall", "x = np.random.bit_generator", "x = math.__loader__.exec_module",
    "import typing\nx = typing.sys", "import typing\nx = typing.get_type_hints",
])
def test_proxies_hold_only_the_allowed_api(ns, code):
    with pytest.raises(AttributeError):
        run(ns, code)


def test_proxies_hold_the_maths_and_are_not_the_modules(ns):
    out = run(ns, "import numpy.linalg as la\nfrom numpy.random import default_rng\n"
                  "y = float(la.norm(np.ones(4))) + math.sqrt(4.0) + float(np.fft.rfft(np.ones(4)).real[0])\n"
                  "r = default_rng(0).normal()\n")
    assert out["y"] == 8.0 and isinstance(out["r"], float)
    assert ns["np"] is not np and not hasattr(ns["np"], "__file__")


@pytest.mark.parametrize("code", ["np.isfinite = abs", "del np.stack", "np.random.seed = abs", "math.pi = 3"])
def test_proxies_cannot_be_patched(ns, code):
    with pytest.raises(AttributeError, match="read-only"):
        run(ns, code)
    assert np.isfinite is not abs and hasattr(np, "stack")


@pytest.mark.parametrize("code, words", [
    ("import os", "import of 'os' is not allowed"),
    ("import numpy.lib.format", "import of 'numpy.lib.format' is not allowed"),
    ("import numpy._core._internal", "not allowed"),
    ("from numpy import load", "reads or writes files"),
    ("from numpy import ctypeslib", "numpy internals"),
    ("from numpy import _core", "underscore"),
    ("from typing import sys", "not in the allowed part"),
    ("from numpy import *", "star imports"),
    ("from numpy import no_such_name", "not part of its allowed API"),
    ("__import__('os', None, None, ('path',), 0)", "import of 'os' is not allowed"),
    ("__import__('numpy', None, None, (), 1)", "relative imports"),
])
def test_import_hook_checks_the_full_name_and_every_imported_name(ns, code, words):
    with pytest.raises(ImportError, match=words):
        run(ns, code)


def test_c_level_imports_of_loaded_modules_get_nothing_back(ns):
    """numpy's C code imports its internals through the program's __import__ (an empty list fromlist); the hook
    lets it find sys.modules itself but hands the program nothing."""
    out = run(ns, "m = __import__('os', None, None, [], 0)\ny = np.ones(3).sum()\n")
    assert out["m"] is None and out["y"] == 3.0
    with pytest.raises(ImportError):
        run(ns, "__import__('no_such_module_xyz', None, None, [], 0)")


@pytest.mark.parametrize("name", ["open", "eval", "exec", "compile", "getattr", "globals", "vars", "type",
                                  "memoryview", "breakpoint", "input"])
def test_builtins_are_restricted(ns, name):
    with pytest.raises(NameError):
        run(ns, f"x = {name}")


def test_worker_applies_the_wall_when_the_static_checks_are_bypassed(monkeypatch):
    monkeypatch.setattr(sandbox, "check_source", lambda *a, **k: None)
    head = "def compute_reward(obs, action, next_obs, info):\n"
    for body, words in [("    np.save('x', obs['x'])\n", "no attribute 'save'"),
                        ("    import os\n", "import of 'os' is not allowed"),
                        ("    open('x')\n", "name 'open' is not defined")]:
        with pytest.raises(RewardProgramError, match=words), SandboxedReward(head + body, INDEX) as program:
            program(np.zeros((2, 1)), np.zeros((2, 1)), np.zeros((2, 1)))
    with pytest.raises(RewardProgramError, match="read-only"):
        SandboxedReward("np.isfinite = abs\n" + head + "    return obs['x'], {}\n", INDEX)


HARMLESS_BINDINGS = '''import math as m
from math import sqrt as root


class Base:
    scale = 2.0


class Scaled(Base):
    pass


def compute_reward(obs, action, next_obs, info):
    match [1.0, 2.0, 3.0]:
        case [a, *rest]:
            first = a + len(rest)
    try:
        caught = 1 / 0
    except ZeroDivisionError as err:
        caught = float(len(str(err)) > 0)
    with np.errstate(divide="ignore") as state:
        opened = 10.0 if state is None else 20.0
    return next_obs["x"] * Scaled.scale + first + root(16.0) + m.floor(0.5) + caught + opened, {}
'''


def test_harmless_binding_idioms_pass_the_static_checks_and_run_in_the_worker():
    """The nearest clean twins of the binding and class-machinery rules (match captures, `as`, import aliases, a
    class with a base) are accepted and run: 3 * 2 + (1 + 2) + 4 + 0 + 1 + 10 = 24 per row."""
    from bird.reward.static import check_source

    assert check_source(HARMLESS_BINDINGS) is None
    with SandboxedReward(HARMLESS_BINDINGS, INDEX) as program:
        reward, _ = program(np.full((2, 1), 3.0), np.zeros((2, 1)), np.full((2, 1), 3.0))
    assert reward.tolist() == [24.0, 24.0]
