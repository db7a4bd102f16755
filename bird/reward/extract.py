"""Pull a reward program out of a generator's answer: one reader, one rule (docs/llm.md, "Reading an answer").

- thinking is never code (bird/llm/visible.py sets `<think>` spans aside; the backends set thinking blocks aside);
- every piece of Python the answer holds is a source (bird/reward/sources.py): fenced blocks (nested ones too), code
  in a JSON string field, or the whole answer; a harness under `if __name__ == "__main__":` is dropped first;
- a candidate is a source defining the entry (def, class or alias); it is complete when it leaves no code out; a
  quote of a program the prompt showed (novelty 0: it adds nothing to it) is never chosen;
- the final complete candidate is chosen; a helper or constant it defines is taken at its latest definition in the
  answer; the names it reads but does not define come from the other sources, then from the programs the prompt showed;
- where the answer offers materially different complete candidates as alternatives (its prose says so, or they are
  fields of one JSON object), bird does not guess: the reading is ambiguous.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations

from bird.llm.blocks import outside_blocks
from bird.llm.visible import visible
from bird.reward.sources import Source, answer_sources, binds, loaded, novelty, parse, python_source, shape

__all__ = ["Extraction", "extract_program", "extract_code", "read_source"]

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_BUILTINS = frozenset(dir(builtins))
# prose that offers programs as alternatives rather than as drafts and a final version
_ALTERNATIVES = re.compile(r"\b(?:alternatives?|alternatively|(?:option|approach|variant)\s*(?:\d+|[a-c])\b|"
                           r"choose (?:one|between|either)|pick (?:one|either|whichever))", re.IGNORECASE)


@dataclass(frozen=True)
class Extraction:
    """The program (None when there is none), why there is none, and how it was assembled (notes). `ambiguous`
    names the candidates when the answer offers several materially different ones (no program is chosen)."""

    code: str | None
    problem: str = ""
    notes: tuple[str, ...] = field(default=())
    ambiguous: tuple[str, ...] = ()


def _free_names(nodes: Sequence[ast.AST]) -> set[str]:
    """Names read but bound nowhere in `nodes` (scopes ignored: enough to find the helpers a program needs)."""
    bound = set()
    for node in (n for top in nodes for n in ast.walk(top)):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, _DEFS):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {a.asname or a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return loaded(nodes) - bound - _BUILTINS


def _latest(chosen: Source, sources: Sequence[Source], entry: str,
            required: Sequence[Sequence[str]] = ()) -> tuple[Source, list[str]]:
    """`chosen` with each helper or constant it defines and reads (or the contract requires: REWARD_WEIGHTS) replaced
    by a later, different definition of the same name in a new (not quoted) source: the answer's latest word on it."""
    assert chosen.tree is not None
    later = [s for s in sources if s is not chosen and not s.known and s.tree is not None and s.order > chosen.order
             and not (s.group and s.group == chosen.group)]
    reads = loaded(chosen.tree.body) | {name for group in required for name in group}
    swaps: list[tuple[ast.stmt, str, str]] = []
    for name, node in chosen.top().items():
        if name == entry or name not in reads or not isinstance(node, (*_DEFS, ast.Assign, ast.AnnAssign)) \
                or any(node is done for done, *_ in swaps):  # `a, b = ...`: one statement, replaced once
            continue
        for src in sorted(later, key=lambda s: s.order, reverse=True):
            new = src.top().get(name)
            if new is None or src.elision(new):
                continue
            if ast.dump(new) == ast.dump(node):  # the latest word is the chosen one's (a revert): nothing to take
                break
            # a statement is replaced only by one binding every name it binds (`a = 5` does not replace `a, b = 1, 2`)
            if set(binds(node)) <= set(binds(new)):
                swaps.append((node, src.segment(new), f"{name} from {src.label}"))
                break
    if not swaps:
        return chosen, []
    lines = chosen.text.splitlines()
    for node, text, _ in sorted(swaps, key=lambda s: s[0].lineno, reverse=True):
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        lines[first - 1 : node.end_lineno] = text.splitlines()
    revised = python_source(chosen.label, "\n".join(lines), chosen.order, chosen.group)
    if revised.tree is None:  # never worse than the candidate as written
        return chosen, []
    return revised, [f"took the latest definition of {', '.join(w for *_, w in swaps)}"]


def _gather(chosen: Source, others: Sequence[Source], required: Sequence[Sequence[str]]) -> dict[str, tuple]:
    """name -> (sort key, text) of the imports and definitions `chosen` needs from `others` (in priority order): the
    names it reads but does not bind, then theirs, and one name of each required group it lacks."""
    assert chosen.tree is not None
    have = set(chosen.top()) | set(chosen.imports())
    pending = [(n,) for n in sorted(_free_names(chosen.tree.body) - have)]
    pending += [tuple(g) for g in required if not have & set(g)]
    found: dict[str, tuple] = {}
    while pending:
        group = pending.pop()
        have.update(group)
        for src, name in ((src, name) for src in others for name in group):
            if name in src.imports():
                line, text = src.imports()[name]
                found[name] = ((0, src.order, line), text)
                break
            node = src.top().get(name)
            if node is not None and not src.elision(node):
                found[name] = ((1, src.order, node.lineno), src.segment(node))
                pending += [(n,) for n in sorted(_free_names([node]) - have - {p[0] for p in pending})]
                break
    return found


def _assemble(chosen: Source, others: Sequence[Source], required: Sequence[Sequence[str]]) -> tuple[str, list[str]]:
    """The chosen source with what it needs from the others: its own leading imports (and docstring) first, then the
    imports it lacked, then the definitions it lacked in answer order, then the rest of it."""
    assert chosen.tree is not None
    found = _gather(chosen, others, required)
    if not found:
        return chosen.text + "\n", []
    lines = chosen.text.splitlines()
    lead = 0  # lines of the leading docstring and imports
    for node in chosen.tree.body:
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and node is chosen.tree.body[0]
        if not (docstring or isinstance(node, (ast.Import, ast.ImportFrom))):
            break
        lead = node.end_lineno or lead
    ordered = sorted(found.items(), key=lambda kv: kv[1][0])
    head = "\n".join([*lines[:lead], *(text for _, (key, text) in ordered if key[0] == 0)]).strip("\n")
    defs = [text for _, (key, text) in ordered if key[0] == 1]
    code = "\n\n".join(p for p in (head, *defs, "\n".join(lines[lead:]).strip("\n")) if p.strip()) + "\n"
    if parse(code)[0] is None:  # never worse than the candidate alone
        return chosen.text + "\n", []
    return code, [f"added from the other blocks or the parent: {', '.join(name for name, _ in ordered)}"]


def _program(chosen: Source, sources: Sequence[Source], known: Sequence[Source], entry: str,
             required: Sequence[Sequence[str]]) -> tuple[str, list[str]]:
    """The whole program of a candidate: latest helper definitions, then what it lacks (new sources first, the
    latest first; then quotes; then the known programs)."""
    revised, notes = _latest(chosen, sources, entry, required)
    rest = sorted((s for s in sources if s is not chosen and s.tree is not None), key=lambda s: (s.known, [-k for k in s.order]))
    code, added = _assemble(revised, [*rest, *known], required)
    return code, notes + added


def _quotes(src: Source, known: Sequence[Source]) -> bool:
    return src.tree is not None and any(novelty(src, k) == 0.0 for k in known)


def _alternatives(cands: Sequence[Source], prose: str) -> list[Source]:
    """The materially different complete candidates, when the answer offers them as alternatives; else []."""
    distinct: dict[str, Source] = {}
    for c in cands:
        if c.tree is not None:
            distinct.setdefault(shape(c.tree), c)
    if len(distinct) < 2:
        return []
    unordered = any(a.group and a.group == b.group for a, b in combinations(distinct.values(), 2))
    return list(distinct.values()) if unordered or _ALTERNATIVES.search(prose) else []


def _defines_text(entry: str) -> re.Pattern[str]:
    return re.compile(rf"^[ \t]*(?:(?:async[ \t]+)?(?:def|class)[ \t]+{re.escape(entry)}\b|{re.escape(entry)}[ \t]*=)", re.M)


def _why_not(src: Source, entry: str) -> str:
    if src.tree is None:
        return f"{src.label}: {src.error}"
    owners = [c.name for c in src.tree.body if isinstance(c, ast.ClassDef)
              for n in c.body if isinstance(n, ast.FunctionDef) and n.name == entry]
    if owners:
        return f"{src.label}: {entry} is a method of class {owners[0]}; define it at the top level"
    names = [n for n in src.top() if not n.isupper()][:6]
    return f"{src.label}: " + (f"defines {', '.join(names)}, not {entry}" if names else f"no definition of {entry}")


def _nothing(blocks: Sequence[object], sources: Sequence[Source], skipped: Sequence[tuple[int, str]], entry: str) -> str:
    """Why no source defines the entry, naming each block and what it holds."""
    if sources and sources[0].whole:
        whole = sources[0].error or f"defines no top-level {entry}"
        return f"the answer has no fenced code block, and as a whole it {whole}; put the program in one ```python block"
    reasons = "; ".join(r for _, r in sorted([*skipped, *((s.order[0], _why_not(s, entry)) for s in sources)],
                                             key=lambda x: x[0]))
    if not blocks:
        return f"no program defines a top-level {entry}: {reasons}"
    return f"no block defines a top-level {entry}; saw {len(blocks)} block(s): {reasons}"


def _set_aside(c: Source) -> str:
    if c.known:
        return f"{c.label}: it repeats a program the prompt showed (the parent's code: it adds nothing to it)"
    return f"{c.label}: it leaves code out ({c.elision()}); give the whole program"


def read_source(src: Source, entry: str, required: Sequence[Sequence[str]] = ()) -> tuple[str | None, str]:
    """A program given whole (a tool call's argument): its text, or why it is none. No text parsing."""
    if src.tree is not None and not src.defines(entry):
        return None, f"{_why_not(src, entry)}"
    if src.tree is not None and src.elision():
        return None, _set_aside(src)
    return src.text + "\n", ""


def extract_program(text: str, entry: str = "compute_reward", required: Sequence[Sequence[str]] = (),
                    known: Sequence[str] = (), json_key: str | None = None) -> Extraction:
    """The program defining `entry` in an answer (the rule: this module's docstring).

    :param required: groups of alternative top-level names the contract needs (("REWARD_WEIGHTS",)): taken from
        the other sources when the chosen one lacks them.
    :param known: programs the prompt showed (the parent's code, a repair's failed code): never chosen.
    :param json_key: the JSON field a contract asks its code in (reward_class_code); other fields are not read then.
    """
    shown = visible(text)
    notes = list(shown.notes)
    if not shown.text.strip():
        why = "the answer holds only thinking (set aside: thinking is never code)" if shown.thinking else "the answer is empty"
        return Extraction(None, why, tuple(notes))
    known_src = [s for i, k in enumerate(known) if k and (s := python_source(f"known program {i + 1}", k)).tree]
    blocks, sources, skipped = answer_sources(shown.text, json_key)
    defines = _defines_text(entry)
    for src in sources:
        notes += src.notes
        src.known = _quotes(src, known_src)
    cands = [s for s in sources if s.defines(entry) or (s.tree is None and not s.whole and defines.search(s.text))]
    if not cands:
        return Extraction(None, _nothing(blocks, sources, skipped, entry), tuple(notes))
    complete = [c for c in cands if not c.known and not c.elision()]
    if complete:
        alternatives = _alternatives(complete, outside_blocks(shown.text))
        if alternatives:
            labels = tuple(c.label for c in alternatives)
            return Extraction(None, f"the answer offers {len(labels)} different complete programs as alternatives: "
                              + ", ".join(labels) + "; bird does not guess which one is meant", tuple(notes), labels)
        chosen = complete[-1]
    else:  # only quotes and excerpts: a quote completed by new parts of the answer is new (only new weights, say)
        chosen = next((c for c in reversed(cands) if c.tree is not None and not c.elision()
                       and not _quotes(python_source(c.label, _program(c, sources, known_src, entry, required)[0]),
                                       known_src)), None)
        if chosen is None:
            return Extraction(None, f"no new complete program defines {entry}: "
                              + "; ".join(_set_aside(c) for c in cands), tuple(notes))
    if len(cands) > 1:
        notes.append(f"took {chosen.label} of {len(cands)} defining {entry}; set aside "
                     + "; ".join(_set_aside(c) if (c.known or c.elision()) else f"{c.label}: an earlier version"
                                 for c in cands if c is not chosen))
    if chosen.tree is None:  # verify reports it as a compile error, with the line
        return Extraction(chosen.text + "\n", notes=(*notes, f"{chosen.label} defines {entry} but does not parse"))
    code, added = _program(chosen, sources, known_src, entry, required)
    if chosen.whole:
        notes.append("the whole answer is the program (no fenced block)")
    return Extraction(code, notes=(*notes, *added))


def extract_code(text: str, entry: str = "compute_reward") -> str | None:
    """The program in an answer, or None (extract_program without a parent or required names)."""
    return extract_program(text, entry).code
