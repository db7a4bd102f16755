"""Meta-World env source for prompts, with the reward and success code removed (reward-leak prevention).

Removed: `evaluate_state`, `compute_reward`, every method whose name mentions reward or success,
`TARGET_RADIUS`-style success thresholds, the `reward_utils` imports, class docstrings, comments, and
assignments to attributes that nothing left reads (the removed code's bookkeeping).
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from functools import cache

__all__ = ["strip_reward_code", "base_class_excerpt", "task_source", "LEAK_PATTERNS", "hidden_names", "success_thresholds",
           "quat_orders"]

# Regexes that must not match any rendered prompt (checked by strip_reward_code and the tests).
LEAK_PATTERNS = (
    r"\bevaluate_state\b",
    r"\bcompute_reward\b",
    r"reward_utils",
    r"\btolerance\(",
    r"hamacher_product",
    r"_gripper_caging_reward",
    r"\b_reward_\w+",
    r"TARGET_RADIUS",
    r"[\"']success[\"']",
    r"\bunscaled_reward\b",
    r"\bin_place_reward\b",
    r"\bgrasp_reward\b",
)

# Base-class members that explain observations and actions; everything else of SawyerXYZEnv is left out.
_BASE_KEEP = (
    "max_path_length",
    "get_endeff_pos",
    "tcp_center",
    "set_xyz_action",
    "_get_pos_goal",
    "_get_curr_obs_combined_no_goal",
    "_get_obs",
    "_reset_hand",
)


def _is_removed_def(node: ast.AST) -> bool:
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    name = node.name.lower()
    return node.name in ("evaluate_state", "compute_reward") or "reward" in name or "success" in name


def _assigned_name(node: ast.AST) -> str | None:
    """Name bound by a class-level `X = ...` / `X: T = ...`, else None."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return node.target.id
    return None


def _self_attr_target(node: ast.AST) -> str | None:
    """Attribute X of a statement `self.X = ...` (single target), else None."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        targets = [node.target]
    else:
        return None
    t = targets[0]
    is_self = isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"
    return t.attr if len(targets) == 1 and is_self else None


def _self_reads(node: ast.AST) -> set[str]:
    return {
        n.attr for n in ast.walk(node)
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)
        and isinstance(n.value, ast.Name) and n.value.id == "self"
    }


def _is_reward_import(node: ast.AST) -> bool:
    if isinstance(node, ast.ImportFrom):
        return "reward_utils" in (node.module or "") or any(a.name == "reward_utils" for a in node.names)
    return isinstance(node, ast.Import) and any("reward_utils" in a.name for a in node.names)


def _strip_class(cls: ast.ClassDef) -> None:
    """Drop reward/success members of `cls` in place."""
    body = []
    for node in cls.body:
        if _is_removed_def(node) or (name := _assigned_name(node)) and "TARGET_RADIUS" in name:
            continue
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue  # class docstring (changelogs)
        else:
            body.append(node)
    cls.body = body or [ast.Pass()]


def _drop_dead_assignments(tree: ast.Module, keep_reads: frozenset[str]) -> None:
    """Remove `self.X = ...` where nothing left reads X (iterated to a fixed point)."""
    changed = True
    while changed:
        changed = False
        for parent in [n for n in ast.walk(tree) if isinstance(getattr(n, "body", None), list)]:
            for stmt in list(parent.body):
                attr = _self_attr_target(stmt)
                if attr is None or attr in keep_reads or attr in _self_reads(tree):
                    continue
                parent.body.remove(stmt)
                changed = True
            if not parent.body:
                parent.body.append(ast.Pass())


def strip_reward_code(source: str, keep_reads: frozenset[str] = frozenset()) -> str:
    """Return `source` without reward and success code (see the module docstring).

    :param source: a Meta-World env module.
    :param keep_reads: self-attributes read elsewhere (the base class); their assignments stay.
    :raises ValueError: if a leak pattern survives the stripping.
    """
    tree = ast.parse(source)
    tree.body = [n for n in tree.body if not _is_reward_import(n) and not _is_removed_def(n)]
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        _strip_class(cls)
    _drop_dead_assignments(tree, keep_reads)
    out = ast.unparse(tree)
    check_no_leak(out)
    return out


def check_no_leak(text: str) -> None:
    """Raise ValueError if `text` matches any of LEAK_PATTERNS."""
    hits = [p for p in LEAK_PATTERNS if re.search(p, text)]
    if hits:
        raise ValueError(f"reward/success code left in a prompt: patterns {hits}")


@cache
def _base_tree() -> ast.ClassDef:
    from metaworld import sawyer_xyz_env

    tree = ast.parse(inspect.getsource(sawyer_xyz_env))
    return next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SawyerXYZEnv")


@cache
def base_class_excerpt() -> str:
    """SawyerXYZEnv reduced to the members that build observations and apply actions."""
    cls = _base_tree()
    keep = [n for n in cls.body if getattr(n, "name", None) in _BASE_KEEP or _assigned_name(n) in _BASE_KEEP]
    excerpt = ast.ClassDef(cls.name, cls.bases, cls.keywords, keep, [], type_params=[])
    out = ast.unparse(ast.Module([excerpt], type_ignores=[]))
    check_no_leak(out)
    return "# Base class (excerpt: observation and action members only)\n" + out


@cache
def _base_reads() -> frozenset[str]:
    cls = _base_tree()
    return frozenset().union(*(_self_reads(n) for n in cls.body if not _is_removed_def(n)))


@cache
def task_source(env_cls: type) -> str:
    """The task class's module source, stripped; attributes the base class reads are kept (made once per class: the
    stripper walks the module's syntax tree, 50 ms)."""
    module = inspect.getmodule(env_cls)
    return strip_reward_code(inspect.getsource(module), _base_reads())


def _task_module_tree(mw_name: str) -> ast.Module:
    from metaworld.env_dict import ALL_V3_ENVIRONMENTS

    return ast.parse(inspect.getsource(inspect.getmodule(ALL_V3_ENVIRONMENTS[mw_name])))


@cache
def hidden_names(mw_name: str) -> frozenset[str]:
    """Identifiers of the reward and success code of a Meta-World task, read from Meta-World's own source (not from
    the stripper): reward_utils' functions, reward/success methods of the task and base class, TARGET_RADIUS, and
    the keys of the info dict evaluate_state returns (quoted)."""
    from metaworld import sawyer_xyz_env
    from metaworld.utils import reward_utils

    out = {"reward_utils", "TARGET_RADIUS", "_TARGET_RADIUS"}
    out |= {n for n, obj in vars(reward_utils).items() if inspect.isfunction(obj)} - {"annotations"}
    for tree in (_task_module_tree(mw_name), ast.parse(inspect.getsource(sawyer_xyz_env))):
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and _is_removed_def(node):
                out.add(node.name)
            if isinstance(node, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "success" for k in node.keys):
                keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
                out |= {f"'{k}'" for k in keys} | {f'"{k}"' for k in keys}
    return frozenset(out)


def _success_expr(fn: ast.FunctionDef) -> ast.AST | None:
    """The expression evaluate_state assigns to `success` or puts under the info key 'success'."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "success" for t in node.targets):
            return node.value
        if isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values, strict=True):
                if isinstance(k, ast.Constant) and k.value == "success" and not isinstance(v, ast.Name):
                    return v
    return None


def _assigned_success(fn: ast.FunctionDef) -> list[ast.AST]:
    """What a function assigns to `success`, with the values of the names that expression reads assigned in the same
    function (`aligned = radius < 0.02; success = aligned and hooked`)."""
    values = {t.id: n.value for n in ast.walk(fn) if isinstance(n, ast.Assign)
              for t in n.targets if isinstance(t, ast.Name)}
    if "success" not in values:
        return []
    expr = values["success"]
    return [expr, *(values[n.id] for n in ast.walk(expr) if isinstance(n, ast.Name) and n.id in values)]


def _success_exprs(tree: ast.Module) -> list[ast.AST]:
    """The expressions a task's success check compares: evaluate_state's `success`, or, where evaluate_state only
    passes on a flag its reward code computed (`reward, ..., success = self.compute_reward(...)`), every `success = ...`
    of the module's functions."""
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "evaluate_state")
    expr = _success_expr(fn)
    if expr is not None and any(isinstance(n, ast.Compare) for n in ast.walk(expr)):
        return [expr]
    return [e for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) for e in _assigned_success(f)]


@cache
def success_thresholds(mw_name: str) -> tuple[float, ...]:
    """The non-zero numbers a Meta-World task's success check compares against (evaluate_state's `success`, followed
    into the reward code where it is computed there), with class constants such as TARGET_RADIUS and numpy's
    constants resolved: e.g. push-v3 -> (0.05,), drawer-close-v3 -> (0.065,), lever-pull-v3 -> (pi / 24,). Zero is
    left out: a sign test reveals nothing."""
    import numpy as np
    from metaworld.env_dict import ALL_V3_ENVIRONMENTS

    cls = ALL_V3_ENVIRONMENTS[mw_name]
    out = []
    for expr in _success_exprs(_task_module_tree(mw_name)):
        for cmp in (n for n in ast.walk(expr) if isinstance(n, ast.Compare)):
            for side in [cmp.left, *cmp.comparators]:
                try:  # constants and class attributes only (`self` is the class); measured quantities fail, skipped
                    value = eval(compile(ast.Expression(side), "<success>", "eval"), {"__builtins__": {}},
                                 {"self": cls, "np": np})
                except Exception:  # noqa: BLE001 - anything that is not a constant expression
                    continue
                if isinstance(value, int | float) and not isinstance(value, bool) and value != 0:
                    out.append(round(float(value), 9))
    return tuple(sorted(set(out)))


def _quat_kind(node: ast.AST) -> str | None:
    """How one expression of `_get_quat_objects` gives an object's orientation: "wxyz" (a MuJoCo body's xquat, or a
    constant such as (1, 0, 0, 0)), "xyzw" (scipy's Rotation(...).as_quat()), "zero" (np.zeros(4) or four zeros)."""
    if isinstance(node, ast.Attribute) and node.attr == "xquat":
        return "wxyz"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if node.func.attr == "as_quat":
            return "xyzw"
        args = node.args[0] if node.args else None
        if node.func.attr == "zeros" and isinstance(args, ast.Constant) and args.value == 4:
            return "zero"
        if node.func.attr == "array" and isinstance(args, ast.List) and len(args.elts) == 4:
            values = [e.value for e in args.elts if isinstance(e, ast.Constant)]
            return "zero" if values == [0.0] * 4 else "wxyz"
    return None


@cache
def quat_orders(mw_name: str) -> tuple[str, ...]:
    """The order of each object's quaternion in the observation, read from the task's `_get_quat_objects`, in object
    order: e.g. push-v3 -> ("xyzw",), hammer-v3 -> ("wxyz", "wxyz"), stick-pull-v3 -> ("xyzw", "zero")."""
    from metaworld.env_dict import ALL_V3_ENVIRONMENTS

    fn = ast.parse(textwrap.dedent(inspect.getsource(ALL_V3_ENVIRONMENTS[mw_name]._get_quat_objects)))
    found = [(n.lineno, n.col_offset, kind) for n in ast.walk(fn) if (kind := _quat_kind(n)) is not None]
    return tuple(kind for *_, kind in sorted(found))
