"""Programmatic crossover (registry family crossover): children built from two earlier rewards without an LLM call.

`module_insert` (R*): the child is parent A with one reward module of parent B inserted, where a module is one entry
of the component dict B's compute_reward returns that A's dict lacks, together with every statement and module-level
helper it depends on (a backward slice of B's body, renamed so it cannot clash with A's names). The child adds the
module to A's total and to its component dict [ours: modules combine additively]."""

from __future__ import annotations

import ast
import builtins
import random
from typing import Any

from bird.components.operators import draw_mate
from bird.config.schema import BirdConfig
from bird.config.search import CrossoverConfig
from bird.registry import get, register
from bird.reward.checks import verify_code
from bird.state import SearchState
from bird.types import Candidate, Failure, FailureKind

__all__ = ["module_insert", "crossover_children", "crossover_share", "CrossoverError"]

_ENTRY = "compute_reward"
_ARGS = ("obs", "action", "next_obs", "info")


class CrossoverError(ValueError):
    """The two parents give no child (no module to insert, or code the operator cannot read)."""


# -- module_insert --------------------------------------------------------------------------------------------
def _entry(tree: ast.Module) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == _ENTRY:
            return node
    raise CrossoverError(f"no top-level {_ENTRY}")


def _component_exprs(fn: ast.FunctionDef) -> tuple[dict[str, ast.expr], int]:
    """Component name -> value expression, from the last `return total, components` of the entry (a dict literal,
    or a name bound to one by the entry's top-level statements, plus `components["k"] = ...` assignments).
    Returns the map and the index of the last top-level statement it depends on."""
    ret = next((n for n in reversed(fn.body) if isinstance(n, ast.Return)), None)
    if ret is None or not (isinstance(ret.value, ast.Tuple) and len(ret.value.elts) == 2):
        raise CrossoverError("the entry's last statement is not `return total, components`")
    comps = ret.value.elts[1]
    if isinstance(comps, ast.Dict):
        return _dict_items(comps), len(fn.body) - 1
    if not isinstance(comps, ast.Name):
        raise CrossoverError("the components are neither a dict literal nor a name")
    out: dict[str, ast.expr] = {}
    last = -1
    for i, stmt in enumerate(fn.body):
        if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == comps.id for t in stmt.targets):
            if not isinstance(stmt.value, ast.Dict):
                raise CrossoverError(f"{comps.id} is not built as a dict literal")
            out, last = _dict_items(stmt.value), i
        elif (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Subscript)
              and isinstance(stmt.targets[0].value, ast.Name) and stmt.targets[0].value.id == comps.id
              and isinstance(stmt.targets[0].slice, ast.Constant) and isinstance(stmt.targets[0].slice.value, str)):
            out[stmt.targets[0].slice.value] = stmt.value
            last = i
    return out, last


def _dict_items(node: ast.Dict) -> dict[str, ast.expr]:
    return {k.value: v for k, v in zip(node.keys, node.values, strict=True)
            if isinstance(k, ast.Constant) and isinstance(k.value, str)}


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _bound(stmt: ast.stmt) -> set[str]:
    """Names a statement binds (assignment targets, loop variables, with-as names)."""
    out = set()
    for n in ast.walk(stmt):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
    return out


def _slice(fn: ast.FunctionDef, expr: ast.expr, upto: int) -> tuple[list[ast.stmt], set[str]]:
    """The entry's top-level statements (before index `upto`) that `expr` depends on, in order, and the free names
    left over (arguments, module-level names, builtins)."""
    needed = _names(expr)
    keep: list[ast.stmt] = []
    for stmt in reversed(fn.body[:upto + 1]):
        if isinstance(stmt, ast.Return):
            continue
        if _bound(stmt) & needed:
            keep.append(stmt)
            needed |= _names(stmt)
    keep.reverse()
    local = set().union(*(_bound(s) for s in keep)) if keep else set()
    return keep, (needed | _names(expr)) - local


def _module_defs(tree: ast.Module, names: set[str]) -> list[ast.stmt]:
    """B's module-level statements (helper defs, constants, imports) that `names` reach, transitively, in order."""
    defs = {}
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) and stmt.name != _ENTRY:
            defs[stmt.name] = stmt
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Import, ast.ImportFrom)):
            for name in _bound(stmt) | {a.asname or a.name.split(".")[0] for a in getattr(stmt, "names", [])}:
                defs[name] = stmt
    todo, seen = [n for n in names if n in defs], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo += [n for n in _names(defs[name]) if n in defs and n not in seen]
    chosen = {id(defs[n]) for n in seen}
    return [s for s in tree.body if id(s) in chosen]


class _Rename(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.copy_location(ast.Name(self.mapping.get(node.id, node.id), node.ctx), node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        node.name = self.mapping.get(node.name, node.name)
        self.generic_visit(node)
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        return node


def _pick(comps_a: dict[str, Any], comps_b: dict[str, Any], rng: random.Random) -> str:
    """A module of B that A lacks (by component name), drawn uniformly [ours]."""
    fresh = sorted(set(comps_b) - set(comps_a))
    if not fresh:  # e.g. the offline synthesiser's programs for one task, which share their component names
        raise CrossoverError(f"parent B has no reward module that parent A lacks (A computes {sorted(comps_a)}, B "
                             f"{sorted(comps_b)})")
    return rng.choice(fresh)


def module_insert(code_a: str, code_b: str, rng: random.Random) -> tuple[str, dict[str, Any]]:
    """Insert one module of reward B into reward A. Returns the child's code and a record of what was inserted.

    Raises CrossoverError when either parent's code cannot be read this way."""
    try:
        tree_a, tree_b = ast.parse(code_a), ast.parse(code_b)
    except SyntaxError as exc:
        raise CrossoverError(f"a parent does not parse: {exc}") from None
    fn_a, fn_b = _entry(tree_a), _entry(tree_b)
    comps_a, _ = _component_exprs(fn_a)
    comps_b, upto = _component_exprs(fn_b)
    name = _pick(comps_a, comps_b, rng)
    stmts, free = _slice(fn_b, comps_b[name], upto)
    helpers = _module_defs(tree_b, free)
    keep = set(_ARGS) | set(dir(builtins))
    b_names = set().union(*(_bound(s) for s in stmts + helpers), *(
        {s.name} for s in helpers if isinstance(s, (ast.FunctionDef, ast.ClassDef))))
    tag = "".join(ch if ch.isalnum() else "_" for ch in name)
    mapping = {n: f"ins_{tag}_{n}" for n in b_names if n not in keep and n not in ("np", "numpy", "math")}
    renamer = _Rename(mapping)
    moved = [renamer.visit(ast.parse(ast.unparse(s)).body[0]) for s in stmts]
    value = renamer.visit(ast.parse(ast.unparse(comps_b[name]), mode="eval").body)
    module_var = f"ins_{tag}"
    block = [*moved, ast.parse(f"{module_var} = 0").body[0]]
    block[-1].value = value  # type: ignore[attr-defined]
    _graft(fn_a, block, name, module_var)
    have = {ast.unparse(s) for s in tree_a.body if isinstance(s, (ast.Import, ast.ImportFrom))}
    imports = [s for s in helpers if isinstance(s, (ast.Import, ast.ImportFrom))]
    new_helpers = [renamer.visit(ast.parse(ast.unparse(s)).body[0]) for s in helpers if s not in imports]
    entry_at = tree_a.body.index(fn_a)
    tree_a.body[entry_at:entry_at] = [*(s for s in imports if ast.unparse(s) not in have), *new_helpers]
    child = ast.unparse(ast.fix_missing_locations(tree_a)) + "\n"
    return child, {"module": name, "statements": len(moved), "helpers": len(helpers)}


def _graft(fn: ast.FunctionDef, block: list[ast.stmt], name: str, module_var: str) -> None:
    """Before every `return total, components` of A's entry: compute the module, add it to the total and the dict."""

    class _Returns(ast.NodeTransformer):
        def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
            return node if node is not fn else self.generic_visit(node)

        def visit_Return(self, node: ast.Return) -> Any:
            if not (isinstance(node.value, ast.Tuple) and len(node.value.elts) == 2):
                return node
            total, comps = (ast.unparse(e) for e in node.value.elts)
            tail = ast.parse(f"return ({total}) + {module_var}, {{**({comps}), {name!r}: {module_var}}}").body
            return [*(ast.parse(ast.unparse(s)).body[0] for s in block), *tail]

    _Returns().visit(fn)
    if not any(isinstance(n, ast.Return) for n in ast.walk(fn)):
        raise CrossoverError("parent A has no `return total, components`")


@register("crossover", "module_insert")
def _module_insert(code_a: str, code_b: str, rng: random.Random) -> tuple[str, dict[str, Any]]:
    return module_insert(code_a, code_b, rng)


@register("crossover", "none")
def _no_crossover(code_a: str, code_b: str, rng: random.Random) -> tuple[str, dict[str, Any]]:
    raise CrossoverError("crossover.operator=none")


# -- children of one iteration -------------------------------------------------------------------------------
def _rng(state: SearchState, slot: int, draw: int) -> random.Random:
    import hashlib

    digest = hashlib.sha256(f"{state.seed}/{state.iteration}/xo/{slot}/{draw}".encode()).hexdigest()
    return random.Random(int(digest[:16], 16))


def _ranked(state: SearchState) -> list[str]:
    return [cid for cid in state.reports if state.fitness(cid) is not None and state.candidates[cid].code]


def _no_parents(state: SearchState) -> str:
    """Why a crossover slot has no two parents: how many are ranked, and what the plan leaves to sampling (a plan of
    K = 2 with one crossover slot, as budget=smoke gives R*, ranks one sampled candidate in iteration 1)."""
    sampled = state.plan.n_candidates - state.plan.n_crossover
    return (f"no two ranked parents to cross: {len(_ranked(state))} ranked so far (the plan gives crossover "
            f"{state.plan.n_crossover} of {state.plan.n_candidates} slots, so {sampled} sampled per iteration)")


def _child(cfg: BirdConfig, state: SearchState, index: int) -> Candidate:
    """One crossover child: parents drawn by crossover.parent; with backfill, redrawn while the child cannot be
    built or fails the checks (a pair already tried is swapped, A ↔ B [ours])."""
    cand = Candidate(id=f"it{state.iteration}-c{index}", iteration=state.iteration, index=index, messages=[],
                     response="(programmatic crossover: no LLM call)", operator=cfg.crossover.operator)
    draws = cfg.crossover.max_draws if cfg.crossover.backfill_failures else 1
    tried = []
    for draw in range(draws):
        rng = _rng(state, index, draw)
        a = get("parent", cfg.crossover.parent)(cfg, state, rng, cfg.crossover.temperature)
        b = draw_mate(cfg, state, cfg.crossover.parent, a, rng, cfg.crossover.temperature) if a else None
        if a is None or b is None:
            cand.failure = Failure(FailureKind.SKIPPED, _no_parents(state))
            break
        if [a, b] in [t["parents"] for t in tried]:  # a pair already tried: the other way round, else give up
            if [b, a] in [t["parents"] for t in tried]:
                break
            a, b = b, a
        cand.parent_id, cand.co_parents, cand.failure, cand.code = a, (b,), None, None
        try:
            cand.code, record = get("crossover", cfg.crossover.operator)(
                state.candidates[a].code, state.candidates[b].code, rng)
        except CrossoverError as exc:
            cand.failure = Failure(FailureKind.OPERATOR_ERROR, f"crossover {a} × {b}: {exc}")
            tried.append({"parents": [a, b], "error": str(exc)})
            continue
        cand.verified = verify_code(cand.code, cfg, state.smoke_batch, state.spec)
        cand.failure = cand.verified.failure
        tried.append({"parents": [a, b], **record, "ok": cand.failure is None})
        if cand.failure is None:
            break
    cand.response += "\n" + "\n".join(f"draw {i}: {t}" for i, t in enumerate(tried))
    state.records.setdefault(cand.id, {})["crossover.json"] = {"operator": cfg.crossover.operator, "draws": tried}
    return cand


def crossover_children(cfg: BirdConfig, state: SearchState, start: int, wave: int) -> list[Candidate]:
    """Wave 0: plan.n_crossover children when two ranked parents exist, else owe them to wave 1 (R*'s waves).
    Wave 1: the owed children, drawn from what wave 0 has just ranked."""
    if cfg.crossover.operator == "none" or state.plan.n_crossover == 0:
        return []
    if wave == 0 and len(_ranked(state)) < 2:
        state.pending_crossovers = state.plan.n_crossover
        return []
    n = state.plan.n_crossover if wave == 0 else state.pending_crossovers
    state.pending_crossovers = 0
    return [_child(cfg, state, start + i) for i in range(n)]


def crossover_share(crossover: CrossoverConfig, method_k: int, k: int) -> int:
    """crossover.n rescaled from the method's K (`method_k`) to the plan's k [ours: rounded, at least 1 and at most
    k − 1]."""
    if crossover.operator == "none" or crossover.n <= 0 or k < 2:
        return 0
    scaled = round(crossover.n * k / max(1, method_k))
    return min(k - 1, max(1, scaled))
