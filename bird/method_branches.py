"""Find code that branches on a method's name (methods are configurations, never code paths).

Flagged, where NAMES are the method names (conf/method/*.yaml stems) and CFG.method is the method attribute of a
config object (`cfg.method`, `self.cfg.method`, `config["method"]`, `getattr(cfg, "method")`, `cfg.get("method")`):
- a comparison (`==`, `!=`, `in`, `is`, ...) with a NAME or with CFG.method, wherever it appears;
- CFG.method or a NAME in the test of `if`, `while`, a conditional expression, `assert` or a comprehension filter;
- `match CFG.method:` and any `case "<NAME>":` pattern;
- dispatch on the method: `table[CFG.method]`, `table.get(CFG.method)`, `getattr(obj, CFG.method)`, and a dict
  literal (or `dict(...)` call) keyed by a NAME.
Reading CFG.method to record or print it is allowed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

__all__ = ["method_branches", "method_branches_in", "method_names"]

_CONFIG_WORDS = ("cfg", "config")
_DISPATCH_CALLS = {"get", "pop", "setdefault", "getattr", "__getitem__"}


def method_names(conf_dir: Path) -> set[str]:
    """The method names: the option files of the conf/method group."""
    return {p.stem for p in (conf_dir / "method").glob("*.yaml")}


def _is_config(node: ast.AST) -> bool:
    """A name or attribute chain that mentions a config object (`cfg`, `self.cfg`, `run_config`, ...)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        if isinstance(node, ast.Attribute) and _config_word(node.attr):
            return True
        node = node.func if isinstance(node, ast.Call) else node.value
    return isinstance(node, ast.Name) and _config_word(node.id)


def _config_word(name: str) -> bool:
    return name.lower() == "conf" or any(w in name.lower() for w in _CONFIG_WORDS)


def _is_method_constant(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value == "method"


def _reads_method(node: ast.AST) -> bool:
    """`cfg.method`, `cfg["method"]`, `getattr(cfg, "method")` or `cfg.get("method")` on a config object."""
    if isinstance(node, ast.Attribute):
        return node.attr == "method" and _is_config(node.value)
    if isinstance(node, ast.Subscript):
        return _is_method_constant(node.slice) and _is_config(node.value)
    if isinstance(node, ast.Call) and node.args:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) >= 2:
            return _is_config(node.args[0]) and _is_method_constant(node.args[1])
        if isinstance(func, ast.Attribute) and func.attr == "get":
            return _is_method_constant(node.args[0]) and _is_config(func.value)
        if isinstance(func, ast.Attribute) and func.attr == "select" and len(node.args) >= 2:  # OmegaConf.select
            return _is_config(node.args[0]) and _is_method_constant(node.args[1])
    return False


def _mentions(node: ast.AST, names: set[str]) -> Iterable[tuple[int, str]]:
    """(line, what) for every method-name constant and every read of the method under `node`."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value in names:
            yield sub.lineno, f"compares with {sub.value!r}"
        elif _reads_method(sub):
            yield sub.lineno, "branches on the method"


def _dispatch_key(node: ast.AST) -> ast.AST | None:
    """The key of a lookup: `x[key]`, `x.get(key)`, `getattr(x, key)`; None for anything else."""
    if isinstance(node, ast.Subscript):
        return node.slice
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) >= 2:
            return node.args[1]
        if isinstance(func, ast.Attribute) and func.attr in _DISPATCH_CALLS and node.args:
            return node.args[0]
    return None


def _pattern_names(pattern: ast.pattern, names: set[str]) -> Iterable[tuple[int, str]]:
    for sub in ast.walk(pattern):
        if isinstance(sub, ast.MatchValue) and isinstance(sub.value, ast.Constant) and sub.value.value in names:
            yield sub.lineno, f"matches {sub.value.value!r}"


def _tests(node: ast.AST) -> list[ast.AST]:
    """The condition expressions a statement or expression branches on."""
    if isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)):
        return [node.test]
    if isinstance(node, ast.comprehension):
        return list(node.ifs)
    if isinstance(node, ast.Compare):
        return [node]
    if isinstance(node, ast.Match):
        return [node.subject]
    return []


def _offences(node: ast.AST, names: set[str]) -> Iterable[tuple[int, str]]:
    for test in _tests(node):
        yield from _mentions(test, names)
    if isinstance(node, ast.match_case):
        yield from _pattern_names(node.pattern, names)
    key = _dispatch_key(node)
    if key is not None and any(_reads_method(sub) for sub in ast.walk(key)):
        yield node.lineno, "dispatches on the method"
    if isinstance(node, ast.Dict):
        for k in node.keys:
            if isinstance(k, ast.Constant) and k.value in names:
                yield k.lineno, f"dispatch table keyed by {k.value!r}"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        for kw in node.keywords:
            if kw.arg in names:
                yield node.lineno, f"dispatch table keyed by {kw.arg!r}"


def method_branches(source: str, names: set[str], where: str = "<source>") -> list[str]:
    """Sorted "where:line what" entries for every place in `source` that branches on a method name."""
    found = {hit for node in ast.walk(ast.parse(source)) for hit in _offences(node, names)}
    return [f"{where}:{line} {what}" for line, what in sorted(found)]


def method_branches_in(root: Path, folders: Iterable[str], names: set[str]) -> list[str]:
    """method_branches over every .py file under root/<folder> for each folder, paths relative to root."""
    out: list[str] = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            out += method_branches(path.read_text(), names, str(path.relative_to(root)))
    return out
