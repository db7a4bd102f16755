"""No pickle is loaded from a file another person may have written: an AST scan of bird's source (bird/, envs/,
analysis/, methods/) finds every call that unpickles (pickle, cloudpickle, dill, joblib, torch.load without
weights_only=True, numpy.load with allow_pickle, SB3's zip/pickle loaders, JAX's serialized executables) and fails
on any outside the allowlist below, where each entry says why its bytes cannot come from a stranger."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("bird", "envs", "analysis", "methods")

# calls that unpickle whatever they are given, by the qualified name they resolve to through the module's imports
UNPICKLERS = {
    "pickle.load", "pickle.loads", "pickle.Unpickler", "_pickle.load", "_pickle.loads", "_pickle.Unpickler",
    "cloudpickle.load", "cloudpickle.loads", "joblib.load", "shelve.open", "pandas.read_pickle",
    "stable_baselines3.PPO.load", "stable_baselines3.common.vec_env.VecNormalize.load",
    "stable_baselines3.common.save_util.load_from_zip_file",
    "jax.experimental.serialize_executable.deserialize_and_load",  # a pickle of native code: see the allowlist
}
MODULES_BANNED = ("dill",)  # any use

# (file, enclosing function, call) -> why the bytes it loads are the user's own
ALLOWED = {
    ("bird/checkpoint.py", "convert_pickle", "pickle.loads"):
        "an earlier bird's checkpoint, converted only when the user passes --trust-pickles for their own directory",
    ("bird/learners/trainer.py", "compile_main", "pickle.loads"):
        "the (jobs, width) the host wrote to the compile step's stdin pipe; never a file",
    ("bird/learners/trainer.py", "_setup", "pickle.loads"):
        "the setup frame the host sends over the trainer's socket; never a file",
    ("bird/learners/jax_ppo.py", "_load", "pickle.loads"):
        "the compile step's output the host passes on: from its stdout, or from the store after the HMAC under "
        "the user's key matched (bird/learners/jax_executables.py)",
    ("bird/learners/jax_executables.py", "Executables.compile", "jax.experimental.serialize_executable."
                                                                 "deserialize_and_load"):
        "a store file whose HMAC under the user's key matched",
    ("bird/learners/jax_executables.py", "load_all", "jax.experimental.serialize_executable.deserialize_and_load"):
        "the compile step's output (see jax_ppo._load)",
}


def _imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> qualified name, for every import in the module (inside functions too)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                names[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def _qualified(node: ast.AST, names: dict[str, str]) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([names.get(node.id, node.id), *reversed(parts)])


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _unpickles(qual: str, call: ast.Call) -> bool:
    if qual in UNPICKLERS or qual.split(".")[0] in MODULES_BANNED:
        return True
    if qual == "torch.load":
        flag = _keyword(call, "weights_only")
        return not (isinstance(flag, ast.Constant) and flag.value is True)
    if qual == "numpy.load":
        flag = _keyword(call, "allow_pickle")
        return flag is not None and not (isinstance(flag, ast.Constant) and flag.value is False)
    return False


def unpickling_calls(path: Path) -> list[tuple[str, str, int]]:
    """(enclosing function, qualified call, line) of each unpickling call in `path`."""
    tree = ast.parse(path.read_text(), str(path))
    names = _imports(tree)
    found: list[tuple[str, str, int]] = []

    def visit(node: ast.AST, scope: list[str]) -> None:
        for child in ast.iter_child_nodes(node):
            inner = [*scope, child.name] if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                 ast.ClassDef)) else scope
            if isinstance(child, ast.Call) and (qual := _qualified(child.func, names)) and _unpickles(qual, child):
                found.append((".".join(scope) or "<module>", qual, child.lineno))
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                mods = [a.name for a in child.names] if isinstance(child, ast.Import) else [child.module or ""]
                found.extend((".".join(scope) or "<module>", m, child.lineno) for m in mods
                             if m.split(".")[0] in MODULES_BANNED)
            visit(child, inner)

    visit(tree, [])
    return found


def _scan() -> dict[tuple[str, str, str], list[int]]:
    calls: dict[tuple[str, str, str], list[int]] = {}
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for scope, qual, line in unpickling_calls(path):
                calls.setdefault((path.relative_to(ROOT).as_posix(), scope, qual), []).append(line)
    return calls


def test_no_pickle_is_loaded_outside_the_allowlist():
    found = _scan()
    outside = {f"{k[0]}:{lines[0]} {k[1]}: {k[2]}" for k, lines in found.items() if k not in ALLOWED}
    assert not outside, f"unpickling calls outside the allowlist: {sorted(outside)}"


def test_every_allowlist_entry_still_names_a_call():
    stale = set(ALLOWED) - set(_scan())
    assert not stale, f"allowlist entries that match no call (remove them): {sorted(stale)}"


@pytest.mark.parametrize(("source", "caught"), [
    ("import pickle\ndef f(b):\n    return pickle.loads(b)\n", True),
    ("from pickle import loads as l\nl(b'')\n", True),
    ("import numpy as np\nnp.load('x', allow_pickle=True)\n", True),
    ("import numpy as np\nnp.load('x', allow_pickle=False)\nnp.load('y')\n", False),
    ("import torch\ntorch.load('x')\n", True),
    ("import torch\ntorch.load('x', weights_only=True)\n", False),
    ("import joblib\njoblib.load('x')\n", True),
    ("import cloudpickle as cp\ncp.loads(b'')\n", True),
    ("import dill\n", True),
    ("from stable_baselines3.common.vec_env import VecNormalize\nVecNormalize.load('x', None)\n", True),
    ("import json\njson.loads('1')\n", False),
])
def test_the_scan_recognises_each_way_of_unpickling(tmp_path, source, caught):
    path = tmp_path / "m.py"
    path.write_text(source)
    assert bool(unpickling_calls(path)) is caught
