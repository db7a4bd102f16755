"""Static checks on an untrusted reward program: syntax, entry point, imports, files, network, processes, leaks."""

from __future__ import annotations

import ast

from bird.types import Failure, FailureKind

__all__ = ["check_source", "ALLOWED_IMPORTS", "ENTRY_POINT", "CONTRACT_ENTRIES"]

ENTRY_POINT = "compute_reward"
# contract -> the top-level name a program must define (a function, or GRACE's state-only class)
CONTRACT_ENTRIES = {"compute_reward": ENTRY_POINT, "reward_class": "Reward", "progress_program": "progress",
                    "weighted_components": ENTRY_POINT}
# weighted_components (component_dict_plus_weights): the module-level weights the harness applies
WEIGHTS_NAME = "REWARD_WEIGHTS"
# progress_program (PRM4RL): a subtask list and two functions of one state
PROGRESS_NAMES = ("plan_list", "determine_subtask", "progress")
ENTRY_ARGS = ("obs", "action", "next_obs", "info")
ALLOWED_IMPORTS = frozenset({"math", "numpy", "typing"})

_IMPORT_REASONS = {
    "files": {"io", "pathlib", "shutil", "tempfile", "glob", "pickle", "shelve", "fileinput", "zipfile", "tarfile"},
    "the network": {"socket", "urllib", "http", "requests", "ssl", "ftplib", "smtplib", "asyncio", "httpx", "aiohttp"},
    "processes": {"os", "sys", "subprocess", "multiprocessing", "signal", "pty", "threading", "concurrent", "ctypes"},
}
_BUILTIN_REASONS = {
    "open": "reads or writes files",
    "exec": "runs dynamic code",
    "eval": "runs dynamic code",
    "compile": "runs dynamic code",
    "__import__": "imports dynamically",
    "globals": "inspects the interpreter",
    "locals": "inspects the interpreter",
    "vars": "inspects the interpreter",
    "getattr": "reads attributes dynamically",
    "setattr": "writes attributes dynamically",
    "delattr": "writes attributes dynamically",
    "input": "reads input",
    "breakpoint": "starts a debugger",
    "exit": "exits the process",
    "quit": "exits the process",
    "memoryview": "touches raw memory",
}
_NUMPY_FILE_ATTRS = {
    "load", "save", "savez", "savez_compressed", "savetxt", "loadtxt", "genfromtxt", "fromfile", "tofile",
    "memmap", "fromregex", "DataSource", "ctypeslib", "lib", "f2py", "distutils", "testing",
}
_SUCCESS_WORDS = ("success",)
_REFERENCE_WORDS = ("reward", "gt_", "bird_episode", "reference")


def _import_failure(module: str, lineno: int) -> Failure | None:
    root = module.split(".")[0]
    if root in ALLOWED_IMPORTS:
        return None
    for what, mods in _IMPORT_REASONS.items():
        if root in mods:
            return Failure(FailureKind.REJECTED, f"line {lineno}: import of {root!r} would give access to {what}")
    return Failure(FailureKind.REJECTED, f"line {lineno}: import of {root!r} is not allowed (allowed: {sorted(ALLOWED_IMPORTS)})")


def _info_key_failure(key: str, lineno: int) -> Failure | None:
    low = key.lower()
    if any(w in low for w in _SUCCESS_WORDS):
        return Failure(FailureKind.REJECTED, f"line {lineno}: reads the success flag (info[{key!r}])")
    if any(w in low for w in _REFERENCE_WORDS):
        return Failure(FailureKind.REJECTED, f"line {lineno}: reads the reference reward (info[{key!r}])")
    return None


def _node_failure(node: ast.AST) -> Failure | None:  # noqa: C901 - one flat dispatch over node types
    line = getattr(node, "lineno", 0)
    if isinstance(node, ast.Import):
        for alias in node.names:
            if (f := _import_failure(alias.name, line)) is not None:
                return f
    elif isinstance(node, ast.ImportFrom):
        return _import_failure(node.module or "", line)
    elif isinstance(node, ast.Name) and node.id in _BUILTIN_REASONS:
        return Failure(FailureKind.REJECTED, f"line {line}: {node.id!r} {_BUILTIN_REASONS[node.id]}")
    elif isinstance(node, ast.Attribute):
        if node.attr.startswith("__"):
            return Failure(FailureKind.REJECTED, f"line {line}: dunder attribute {node.attr!r} is not allowed")
        if node.attr in _NUMPY_FILE_ATTRS:
            return Failure(FailureKind.REJECTED, f"line {line}: '.{node.attr}' reads or writes files")
    elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "info":
        if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            return _info_key_failure(node.slice.value, line)
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "info"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return _info_key_failure(node.args[0].value, line)
    elif isinstance(node, (ast.Global, ast.Nonlocal)):
        return Failure(FailureKind.REJECTED, f"line {line}: global/nonlocal state is not allowed")
    return None


def _entry_failure(tree: ast.Module, entry: str, n_args: int) -> Failure | None:
    defs = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == entry]
    if not defs:
        return Failure(FailureKind.BAD_SIGNATURE, f"no top-level function {entry!r}")
    args = defs[0].args
    positional = args.posonlyargs + args.args
    required = len(positional) - len(args.defaults)
    if required > n_args or (len(positional) < n_args and args.vararg is None):
        names = ", ".join(ENTRY_ARGS[:n_args])
        return Failure(FailureKind.BAD_SIGNATURE, f"{entry} must accept ({names}); got {len(positional)} positional args")
    return None


def _class_failure(tree: ast.Module, entry: str) -> Failure | None:
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == entry]
    if not classes:
        return Failure(FailureKind.BAD_SIGNATURE, f"no top-level class {entry!r}")
    methods = {n.name: n for n in classes[0].body if isinstance(n, ast.FunctionDef)}
    fn = methods.get("reward_fn")
    if fn is None or len(fn.args.args) < 2:
        return Failure(FailureKind.BAD_SIGNATURE, f"class {entry} needs a method reward_fn(self, state)")
    return None


def _progress_failure(tree: ast.Module) -> Failure | None:
    fns = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for name in PROGRESS_NAMES[1:]:
        if name not in fns or len(fns[name].args.posonlyargs + fns[name].args.args) < 1:
            return Failure(FailureKind.BAD_SIGNATURE, f"no top-level function {name}(obs)")
    assigned = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    assigned |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    if not assigned & {"plan_list", "PLAN_LIST"}:
        return Failure(FailureKind.BAD_SIGNATURE, "no top-level plan_list = [...] (the subtask list)")
    return None


def _weights_failure(tree: ast.Module) -> Failure | None:
    assigned = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    assigned |= {n.target.id for n in tree.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    if WEIGHTS_NAME not in assigned:
        return Failure(FailureKind.BAD_SIGNATURE, f"no top-level {WEIGHTS_NAME} = {{component: weight}}")
    return None


def check_source(code: str, entry: str = ENTRY_POINT, n_args: int = len(ENTRY_ARGS),
                 contract: str = "compute_reward") -> Failure | None:
    """Return the first reason to reject `code`, or None when the static checks pass.

    :param contract: "compute_reward" (a function `entry`), "reward_class" (a class `entry` with reward_fn),
        "progress_program" (plan_list, determine_subtask(obs), progress(obs)) or "weighted_components" (a function
        `entry` returning a dict of components, and REWARD_WEIGHTS).
    """
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return Failure(FailureKind.COMPILE_ERROR, f"line {exc.lineno}: {exc.msg}")
    for node in ast.walk(tree):
        if (failure := _node_failure(node)) is not None:
            return failure
    if contract == "reward_class":
        return _class_failure(tree, entry)
    if contract == "progress_program":
        return _progress_failure(tree)
    if contract == "weighted_components":
        return _entry_failure(tree, entry, n_args) or _weights_failure(tree)
    return _entry_failure(tree, entry, n_args)
