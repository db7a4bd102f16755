"""Gym MuJoCo v5 env source for prompts, with the reference reward removed (BIRD Table 9 "full source" for Eureka).

Removed from the task's module: docstrings and credits; every method, property and `__init__` argument whose name
mentions a reward or a cost (`_get_rew`, `healthy_reward`, `control_cost`, `ctrl_cost_weight`, ...); every statement
that reads what was removed or assigns a reward, transitively; reward entries of info dicts. A returned reward is
shown as `...`. Termination (e.g. Hopper's `is_healthy`) is dynamics and stays.
"""

from __future__ import annotations

import ast
import inspect
import re
from functools import cache

__all__ = ["full_source", "hidden_names", "REWARD_NAME"]

REWARD_NAME = re.compile(r"rew|cost", re.IGNORECASE)  # _get_rew, healthy_reward, ctrl_cost_weight, reward_dist, ...


def _named(name: str, remove: frozenset[str]) -> bool:
    """A name the stripper removes: one holding "rew" or "cost", or one of `remove` (a task file's source.remove)."""
    return bool(REWARD_NAME.search(name)) or name in remove


def _reads(node: ast.AST) -> set[str]:
    """Names and self-attributes an expression or statement reads."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out.add(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self":
            out.add(n.attr)
    return out


def _target_names(t: ast.AST) -> set[str]:
    if isinstance(t, ast.Name):
        return {t.id}
    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
        return {t.attr}
    if isinstance(t, ast.Tuple | ast.List):
        return set().union(*(_target_names(e) for e in t.elts))
    return set()


def _targets(stmt: ast.stmt) -> set[str]:
    """Names and self-attributes a statement binds."""
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    return set().union(*(_target_names(t) for t in targets if t is not None))


class _Scrub(ast.NodeTransformer):
    """Drops reward entries from dicts and call arguments, and shows a returned reward as `...`."""

    def __init__(self, tainted: set[str], remove: frozenset[str] = frozenset()) -> None:
        self.tainted, self.remove = tainted, remove

    def _bad(self, node: ast.AST | None) -> bool:
        return node is not None and bool(_reads(node) & self.tainted)

    def visit_Dict(self, node: ast.Dict) -> ast.AST:
        self.generic_visit(node)
        keep = [(k, v) for k, v in zip(node.keys, node.values, strict=True)
                if not self._bad(v) and not (isinstance(k, ast.Constant) and _named(str(k.value), self.remove))]
        node.keys, node.values = [k for k, _ in keep], [v for _, v in keep]
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        node.args = [a for a in node.args if not self._bad(a)]
        node.keywords = [k for k in node.keywords if not self._bad(k.value) and not _named(k.arg or "", self.remove)]
        return node

    def visit_Return(self, node: ast.Return) -> ast.AST:
        if isinstance(node.value, ast.Tuple):
            node.value.elts = [ast.Constant(...) if self._bad(e) else e for e in node.value.elts]
        elif self._bad(node.value):
            node.value = ast.Constant(...)
        return node


def _strip_body(body: list[ast.stmt], tainted: set[str], remove: frozenset[str] = frozenset()) -> list[ast.stmt]:
    """Statements of `body` that neither assign a reward nor read a tainted name (their targets become tainted);
    reward entries of the dicts, calls and returns that stay are scrubbed first."""
    out = []
    for stmt in body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.Expr | ast.Return):
            stmt = _Scrub(tainted, remove).visit(stmt)
        if isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = _targets(stmt)
            if any(_named(t, remove) for t in targets) or (stmt.value is not None and _reads(stmt.value) & tainted):
                tainted |= targets
                continue
        if isinstance(stmt, ast.Expr) and _reads(stmt) & tainted:
            continue
        for name in ("body", "orelse"):
            block = getattr(stmt, name, None)
            if block and isinstance(block, list) and not isinstance(stmt, ast.FunctionDef | ast.ClassDef):
                setattr(stmt, name, _strip_body(block, tainted, remove) or [ast.Pass()])
        out.append(stmt)
    return out


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


def _strip_class(cls: ast.ClassDef, remove: frozenset[str] = frozenset()) -> None:
    tainted: set[str] = set(remove)
    body = []
    for node in cls.body:
        if _is_docstring(node):
            continue
        if isinstance(node, ast.FunctionDef) and _named(node.name, remove):
            tainted.add(node.name)
            continue
        body.append(node)
    for fn in (n for n in body if isinstance(n, ast.FunctionDef)):
        args = fn.args
        dropped = {a.arg for a in args.args if _named(a.arg, remove)}
        tainted |= dropped
        n_def = len(args.defaults)
        pairs = list(zip(args.args[len(args.args) - n_def:], args.defaults, strict=True))
        args.args = [a for a in args.args if a.arg not in dropped]
        args.defaults = [d for a, d in pairs if a.arg not in dropped]
        fn.body = [s for s in fn.body if not _is_docstring(s)]
    for _ in range(3):  # taint flows between methods through self-attributes: iterate to a fixed point
        for fn in (n for n in body if isinstance(n, ast.FunctionDef)):
            fn.body = _strip_body(fn.body, tainted, remove) or [ast.Pass()]
    cls.body = [_Scrub(tainted, remove).visit(n) for n in body] or [ast.Pass()]


def _removed_at_top(node: ast.stmt, remove: frozenset[str]) -> bool:
    """A module-level function, class or assignment that `remove` names."""
    if isinstance(node, ast.FunctionDef | ast.ClassDef):
        return node.name in remove
    return isinstance(node, ast.Assign | ast.AnnAssign) and bool(_targets(node) & remove)


def full_source(env_cls: type, module_source: str | None = None, origin: str = "Gymnasium",
                remove: frozenset[str] = frozenset()) -> str:
    """The module of `env_cls` (a Gymnasium env, or a Brax env) without its reward code (see the module docstring).
    `module_source` replaces the module's own text (e.g. with error messages blanked, or a task file's source.file);
    `remove` names more parts to remove, with whatever reads them (a task file's source.remove).

    :raises ValueError: if a reward or cost name, or a name of `remove`, survives the stripping.
    """
    tree = ast.parse(module_source or inspect.getsource(inspect.getmodule(env_cls)))
    keep = []
    for node in tree.body:
        if _is_docstring(node) or (isinstance(node, ast.Assign) and _targets(node) == {"__credits__"}):
            continue
        if _removed_at_top(node, remove):
            continue
        if isinstance(node, ast.ClassDef) and node.name == env_cls.__name__:
            _strip_class(node, remove)
        if isinstance(node, ast.FunctionDef):  # a module-level helper (Humanoid's mass_center): its docstring goes
            node.body = [s for s in node.body if not _is_docstring(s)] or [ast.Pass()]
        keep.append(node)
    tree.body = keep
    out = ast.unparse(ast.fix_missing_locations(tree))
    left = sorted({w for w in re.findall(r"[A-Za-z_]\w*", out) if _named(w, remove)})
    if left:
        raise ValueError(f"reward code left in the {env_cls.__name__} source: {left}")
    return f"# {origin} source without the env's own scoring code (`...` marks a removed return value)\n" + out + "\n"


@cache
def hidden_names(env_cls: type) -> frozenset[str]:
    """Names of the reference reward in the module of `env_cls`, read from Gymnasium's own source: reward/cost
    methods, properties and constructor arguments, the attributes they set, and the reward keys of info dicts
    (quoted)."""
    tree = ast.parse(inspect.getsource(inspect.getmodule(env_cls)))
    out: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef) and REWARD_NAME.search(n.name):
            out.add(n.name)
        elif isinstance(n, ast.arg) and REWARD_NAME.search(n.arg):
            out.add(n.arg)
        elif isinstance(n, ast.Attribute) and REWARD_NAME.search(n.attr):
            out.add(n.attr)
        elif isinstance(n, ast.Dict):
            out |= {f"'{k.value}'" for k in n.keys if isinstance(k, ast.Constant) and REWARD_NAME.search(str(k.value))}
            out |= {f'"{k.value}"' for k in n.keys if isinstance(k, ast.Constant) and REWARD_NAME.search(str(k.value))}
    return frozenset(out)
