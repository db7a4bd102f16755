"""Pull a reward program out of a generator's answer, as models write answers.

Rules (docs/llm.md, "What bird does with an answer"):
- every fenced block is read; a block is Python when tagged `python`/`py` (any case) or untagged;
- the entry is found by its exact name among a block's top-level definitions, through the AST;
- when several blocks define it, the last one that is not a known program (the parent's code quoted back) wins,
  else the last one;
- names the chosen block uses but does not define (imports, helpers, constants such as REWARD_WEIGHTS) are taken
  from the other blocks (new code first, the latest definition first), then from the known programs;
- an answer with no fenced block is taken whole only when it parses as a Python module that defines the entry;
- when no block defines the entry, the reason names every block seen and why it was not taken.
"""

from __future__ import annotations

import ast
import builtins
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field

from bird.llm.blocks import Block, fenced_blocks

__all__ = ["Extraction", "extract_program", "extract_code"]

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_BUILTINS = frozenset(dir(builtins))
_TAG_LINES = {"python", "py", "python3"}


@dataclass(frozen=True)
class Extraction:
    """The program (None when there is none), why there is none, and how it was assembled (notes)."""

    code: str | None
    problem: str = ""
    notes: tuple[str, ...] = field(default=())


@dataclass
class _Source:
    """A parsed piece of Python: a block of the answer (order = its index) or a known program (order 0)."""

    label: str
    text: str
    tree: ast.Module
    order: int = 0
    known: bool = False  # the block only repeats a known program (the parent's code)

    def top(self) -> dict[str, ast.stmt]:
        """Top-level definitions and assignments by the name they bind (the last binding wins)."""
        out: dict[str, ast.stmt] = {}
        for node in self.tree.body:
            for name in _stmt_binds(node):
                out[name] = node
        return out

    def imports(self) -> dict[str, tuple[int, str]]:
        """name -> (line, a one-name import binding it): an unneeded, possibly refused import is never carried."""
        out: dict[str, tuple[int, str]] = {}
        for node in self.tree.body:
            if isinstance(node, ast.Import):
                out.update({a.asname or a.name.split(".")[0]: (node.lineno, ast.unparse(ast.Import(names=[a])))
                            for a in node.names})
            elif isinstance(node, ast.ImportFrom) and node.module != "__future__":
                out.update({a.asname or a.name: (node.lineno, ast.unparse(ast.ImportFrom(module=node.module, names=[a],
                                                                                         level=node.level)))
                            for a in node.names})
        return out

    def segment(self, node: ast.stmt) -> str:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        return "\n".join(self.text.splitlines()[first - 1 : node.end_lineno])

    def defines(self, entry: str) -> bool:
        return any(isinstance(n, _DEFS) and n.name == entry for n in self.tree.body)


def _stmt_binds(node: ast.stmt) -> list[str]:
    if isinstance(node, _DEFS):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def _free_names(nodes: Sequence[ast.AST]) -> set[str]:
    """Names read but bound nowhere in `nodes` (scopes ignored: enough to find the helpers a program needs)."""
    loaded, bound = set(), set()
    for node in (n for top in nodes for n in ast.walk(top)):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, _DEFS):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {a.asname or a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return loaded - bound - _BUILTINS


def _parse(text: str) -> tuple[ast.Module | None, str]:
    try:
        return ast.parse(text), ""
    except SyntaxError as exc:
        return None, f"does not parse (line {exc.lineno}: {exc.msg})"
    except ValueError as exc:  # null bytes
        return None, f"does not parse ({exc})"
    except (RecursionError, MemoryError):
        return None, "does not parse (nested too deeply)"


def _repeats_known(src: _Source, known: Sequence[_Source]) -> bool:
    """Each top-level definition of the block is identical (same AST) in one known program."""
    top = src.top()
    try:
        return bool(top) and any(all(name in k.top() and ast.dump(node) == ast.dump(k.top()[name])
                                     for name, node in top.items()) for k in known)
    except RecursionError:  # a tree too deep to compare is not a quote
        return False


def _why_not(block: Block, src: _Source | None, error: str, entry: str) -> str:
    if block.tag and not block.python_tagged:
        return f"{block.label()}: tagged {block.tag!r}, not Python"
    if src is None:
        return f"{block.label()}: {error}"
    owners = [c.name for c in src.tree.body if isinstance(c, ast.ClassDef)
              for n in c.body if isinstance(n, ast.FunctionDef) and n.name == entry]
    if owners:
        return f"{block.label()}: {entry} is a method of class {owners[0]}; define it at the top level"
    names = [n for n in src.top() if not n.isupper()][:6]
    return f"{block.label()}: " + (f"defines {', '.join(names)}, not {entry}" if names else f"no definition of {entry}")


def _gather(chosen: _Source, others: Sequence[_Source], required: Sequence[Sequence[str]]) -> dict[str, tuple]:
    """name -> (sort key, text) of the imports and definitions `chosen` needs from `others` (in priority order): the
    names it reads but does not bind, then theirs, and one name of each required group it lacks."""
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
            if node is not None:
                found[name] = ((1, src.order, node.lineno), src.segment(node))
                pending += [(n,) for n in sorted(_free_names([node]) - have - {p[0] for p in pending})]
                break
    return found


def _assemble(chosen: _Source, others: Sequence[_Source], required: Sequence[Sequence[str]]) -> tuple[str, tuple[str, ...]]:
    """The chosen block with what it needs from the others: its own leading imports (and docstring) first, then the
    imports it lacked, then the definitions it lacked in answer order, then the rest of the block."""
    found = _gather(chosen, others, required)
    if not found:
        return chosen.text + "\n", ()
    lines = chosen.text.splitlines()
    lead = 0  # lines of the block's leading docstring and imports
    for node in chosen.tree.body:
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and node is chosen.tree.body[0]
        if not (docstring or isinstance(node, (ast.Import, ast.ImportFrom))):
            break
        lead = node.end_lineno or lead
    ordered = sorted(found.items(), key=lambda kv: kv[1][0])
    head = "\n".join([*lines[:lead], *(text for _, (key, text) in ordered if key[0] == 0)]).strip("\n")
    defs = [text for _, (key, text) in ordered if key[0] == 1]
    code = "\n\n".join(p for p in (head, *defs, "\n".join(lines[lead:]).strip("\n")) if p.strip()) + "\n"
    if _parse(code)[0] is None:  # never worse than the block alone
        return chosen.text + "\n", ()
    return code, (f"added from the other blocks or the parent: {', '.join(name for name, _ in ordered)}",)


def _unfenced(text: str, entry: str, required: Sequence[Sequence[str]], known: Sequence[_Source]) -> Extraction:
    body = textwrap.dedent(text).strip("\n")
    first, _, rest = body.partition("\n")
    if first.strip().lower() in _TAG_LINES:  # a fence's tag left behind without its fence
        body = rest
    tree, error = _parse(body)
    if tree is None:
        return Extraction(None, f"the answer has no fenced code block, and as a whole it {error}; "
                                "put the program in one ```python block")
    src = _Source("the answer", body, tree)
    if not src.defines(entry):
        return Extraction(None, f"the answer has no fenced code block, and it defines no top-level {entry}")
    code, notes = _assemble(src, known, required)
    return Extraction(code, notes=("the whole answer is the program (no fenced block)", *notes))


def extract_program(text: str, entry: str = "compute_reward", required: Sequence[Sequence[str]] = (),
                    known: Sequence[str] = ()) -> Extraction:
    """The program defining `entry` in an answer.

    :param required: groups of alternative top-level names the contract needs (("REWARD_WEIGHTS",)): taken from
        the other blocks when the chosen block lacks them.
    :param known: programs the prompt showed (the parent's code): a block that repeats one is not the answer.
    """
    known_src = [_Source(f"known program {i + 1}", k, t) for i, k in enumerate(known) if (t := _parse(k or "")[0])]
    blocks = fenced_blocks(text)
    if not blocks:
        if not (text or "").strip():
            return Extraction(None, "the answer is empty")
        return _unfenced(text, entry, required, known_src)
    sources: list[_Source] = []
    entries: list[tuple[Block, _Source | None]] = []  # blocks defining the entry (None: it does not parse)
    reasons: list[str] = []
    defines = re.compile(rf"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+{re.escape(entry)}\b", re.M)
    for block in blocks:
        python = block.python_tagged or not block.tag
        tree, error = _parse(block.text) if python else (None, "")
        src = _Source(block.label(), block.text, tree, block.index) if tree is not None else None
        if src is not None:
            src.known = _repeats_known(src, known_src)
            sources.append(src)
        if src is not None and src.defines(entry):
            entries.append((block, src))
        elif src is None and python and defines.search(block.text):
            entries.append((block, None))
        else:
            reasons.append(_why_not(block, src, error, entry))
    if not entries:
        return Extraction(None, f"no block defines a top-level {entry}; saw {len(blocks)} block(s): " + "; ".join(reasons))
    fresh = [e for e in entries if e[1] is None or not e[1].known]
    block, chosen = (fresh or entries)[-1]
    notes = []
    if len(entries) > 1:
        why = " (they repeat the parent's code)" if fresh and len(fresh) < len(entries) else ""
        notes.append(f"took {block.label()} of {len(entries)} defining {entry}; not "
                     f"{', '.join(b.label() for b, _ in entries if b is not block)}{why}")
    if chosen is None:  # verify reports it as a compile error, with the line
        return Extraction(block.text + "\n", notes=(*notes, f"{block.label()} defines {entry} but does not parse"))
    others = [s for s in reversed(sources) if s is not chosen and not s.known]
    others += [s for s in reversed(sources) if s is not chosen and s.known] + known_src
    code, added = _assemble(chosen, others, required)
    return Extraction(code, notes=(*notes, *added))


def extract_code(text: str, entry: str = "compute_reward") -> str | None:
    """The program in an answer, or None (extract_program without a parent or required names)."""
    return extract_program(text, entry).code
