"""The pieces of Python an answer holds, for bird/reward/extract.py: fenced blocks, code in a JSON string field, or the
whole answer; each with its harness (`if __name__ == "__main__":`) dropped, its elisions found, and how much of it
is new next to the programs the prompt showed (a quote of the parent is never the answer)."""

from __future__ import annotations

import ast
import difflib
import io
import json
import re
import textwrap
import tokenize
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from bird.llm.blocks import Block, fenced_blocks
from bird.llm.parsing import AnswerParseError, parse_json_answer

__all__ = ["Source", "answer_sources", "binds", "loaded", "parse", "python_source", "novelty", "shape"]

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_JSON_TAGS = frozenset({"json", "jsonc", "json5", ""})
_TAG_LINES = {"python", "py", "python3"}
_MAX_TOKENS = 5_000  # a longer program is never measured against a known one (not a quote)
# a comment that stands for code left out: `# ...`, `# … rest unchanged`, `# (rest of the function as before)`;
# not `# ...and then` (an ellipsis in prose)
_ELIDED_COMMENT = re.compile(
    r"^\s*#\s*(?:(?:\.\.\.|…)(?:\s|$)|\(?(?:rest|remaining|other|existing|same|previous)\b.*"
    r"\b(?:unchanged|as before|as above|same|omitted|code)\b)", re.IGNORECASE)


@dataclass
class Source:
    """One piece of Python: `order` its place in the answer; `group` > 0 for pieces with no order between them
    (the fields of one JSON object); `tree` None when it does not parse (`error` says why)."""

    label: str
    text: str
    tree: ast.Module | None
    order: tuple[int, int] = (0, 0)
    group: int = 0
    error: str = ""
    notes: list[str] = field(default_factory=list)
    known: bool = False  # it only repeats (all or part of) a program the prompt showed
    whole: bool = False  # the whole answer (no fenced block): a program only when it parses
    _tokens: list[str] | None = field(default=None, repr=False)

    def tokens(self) -> list[str]:
        """Its tokens without formatting, comments, docstrings and `...` ([] when it cannot be measured)."""
        if self._tokens is None:
            try:
                self._tokens = _tokens(self.tree) if self.tree is not None else []
            except (RecursionError, MemoryError, SyntaxError, ValueError, tokenize.TokenError):
                self._tokens = []
        return self._tokens

    def top(self) -> dict[str, ast.stmt]:
        """Top-level definitions and assignments by the name they bind (the last binding wins)."""
        out: dict[str, ast.stmt] = {}
        for node in self.tree.body if self.tree else []:
            for name in binds(node):
                out[name] = node
        return out

    def imports(self) -> dict[str, tuple[int, str]]:
        """name -> (line, a one-name import binding it): an unneeded, possibly refused import is never carried."""
        out: dict[str, tuple[int, str]] = {}
        for node in self.tree.body if self.tree else []:
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
        """`entry` is a top-level def or class, or a top-level alias of one (`compute_reward = my_reward`)."""
        return any((isinstance(n, _DEFS) and n.name == entry) or _alias(n, entry) for n in (self.tree.body if self.tree else []))

    def elision(self, node: ast.AST | None = None) -> str:
        """Where the program (or one node of it) leaves code out, or "": a bare `...` statement, or a comment
        standing for omitted code."""
        if self.tree is None:
            return ""
        scope = node or self.tree
        for n in ast.walk(scope):
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and n.value.value is Ellipsis:
                return f"line {n.lineno}: `...`"
        first, last = (1, len(self.text.splitlines())) if node is None else (node.lineno, node.end_lineno or node.lineno)
        for k, line in enumerate(self.text.splitlines()[first - 1 : last], first):
            if _ELIDED_COMMENT.match(line):
                return f"line {k}: `{line.strip()[:60]}`"
        return ""


def binds(node: ast.stmt) -> list[str]:
    if isinstance(node, _DEFS):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def _alias(node: ast.stmt, entry: str) -> bool:
    return (isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
            and any(isinstance(t, ast.Name) and t.id == entry for t in node.targets))


def parse(text: str) -> tuple[ast.Module | None, str]:
    try:
        return ast.parse(text), ""
    except SyntaxError as exc:
        return None, f"does not parse (line {exc.lineno}: {exc.msg})"
    except ValueError as exc:  # null bytes
        return None, f"does not parse ({exc})"
    except (RecursionError, MemoryError):
        return None, "does not parse (nested too deeply)"


def _is_main_guard(node: ast.stmt) -> bool:
    if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.comparators) == 1):
        return False
    sides = [node.test.left, node.test.comparators[0]]
    return (isinstance(node.test.ops[0], ast.Eq) and any(isinstance(s, ast.Name) and s.id == "__name__" for s in sides)
            and any(isinstance(s, ast.Constant) and s.value == "__main__" for s in sides))


def loaded(nodes: Sequence[ast.AST]) -> set[str]:
    """Every name `nodes` read."""
    return {n.id for top in nodes for n in ast.walk(top) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def _drop_harness(text: str, tree: ast.Module) -> tuple[str, ast.Module, str]:
    """`text` without its top-level `if __name__ == "__main__":` blocks and the imports only they read."""
    guards = [n for n in tree.body if _is_main_guard(n)]
    if not guards:
        return text, tree, ""
    rest = [n for n in tree.body if n not in guards]
    used_by_harness, still_used = loaded(guards), loaded(rest)
    drop: set[int] = {k for g in guards for k in range(g.lineno, (g.end_lineno or g.lineno) + 1)}
    names: list[str] = []
    for node in rest:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound = [a.asname or a.name.split(".")[0] for a in node.names]
            if all(b in used_by_harness and b not in still_used for b in bound):
                drop |= set(range(node.lineno, (node.end_lineno or node.lineno) + 1))
                names += bound
    kept = "\n".join(line for k, line in enumerate(text.splitlines(), 1) if k not in drop).strip("\n")
    new_tree, _ = parse(kept)
    if new_tree is None:  # never worse than the text as written
        return text, tree, ""
    what = f"dropped the `if __name__ == \"__main__\":` harness (line {guards[0].lineno})"
    return kept, new_tree, what + (f" and the imports only it read ({', '.join(names)})" if names else "")


def python_source(label: str, text: str, order: tuple[int, int] = (0, 0), group: int = 0) -> Source:
    """A Source from Python text: dedented, its harness dropped."""
    text = textwrap.dedent(text).strip("\n")
    tree, error = parse(text)
    src = Source(label, text, tree, order, group, error)
    if tree is not None:
        src.text, src.tree, note = _drop_harness(text, tree)
        if note:
            src.notes.append(f"{label}: {note}")
    return src


def _code_fields(value: Any, path: str = "", depth: int = 0) -> Iterator[tuple[str, str]]:
    """(field path, text) of the string fields of a JSON value that may hold code (they span lines or define)."""
    if depth > 3:
        return
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        where = f"{path}.{key}" if path else str(key)
        if isinstance(item, str) and ("\n" in item.strip() or re.search(r"\b(def|class)\s", item)):
            yield where, item
        elif isinstance(item, (dict, list)):
            yield from _code_fields(item, where, depth + 1)


def _json_sources(obj: dict[str, Any], where: str, order: int, group: int, json_key: str | None) -> list[Source]:
    fields = list(_code_fields(obj))
    if json_key is not None and isinstance(obj.get(json_key), str):  # the contract names its field: only that one
        fields = [(json_key, obj[json_key])]
    return [python_source(f"JSON field {key!r} ({where})", text, (order, k), group) for k, (key, text) in
            enumerate(fields, 1)]


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def answer_sources(text: str, json_key: str | None = None) -> tuple[list[Block], list[Source], list[tuple[int, str]]]:
    """The blocks of a (visible) answer, the Python sources they hold, and why each other block holds none
    ((block index, reason)).

    Python blocks (tagged python/py or untagged) are sources; a JSON object (a ```json block, or the whole answer)
    gives one source per string field holding code; an answer with no block is one source when it parses whole."""
    blocks = fenced_blocks(text)
    sources: list[Source] = []
    skipped: list[tuple[int, str]] = []
    for block in blocks:
        obj = _json_object(block.text) if block.tag in _JSON_TAGS else None
        found = _json_sources(obj, block.label(), block.index, block.index, json_key) if obj is not None else []
        if found:
            sources += found
        elif obj is None and (block.python_tagged or not block.tag):
            sources.append(python_source(block.label(), block.text, (block.index, 0)))
        else:
            what = f"tagged {block.tag!r}, not Python" if block.tag else "a JSON object with no code in it"
            skipped.append((block.index, f"{block.label()}: {what}"))
    if blocks:
        return blocks, sources, skipped
    body = textwrap.dedent(text).strip("\n")
    try:  # JSON mode, or a JSON object in the prose
        found = _json_sources(parse_json_answer(body), "the answer", 1, 1, json_key) if "{" in body else []
    except AnswerParseError:
        found = []
    if found:
        return blocks, found, skipped
    first, _, rest = body.partition("\n")
    if first.strip().lower() in _TAG_LINES:  # a fence's tag left behind without its fence
        body = rest
    src = python_source("the answer", body, (1, 0))
    src.whole = True
    return blocks, [src], skipped


# -- how a program compares with the programs the prompt showed -----------------------------------------------------
def _strip(tree: ast.Module) -> ast.Module:
    """A copy without docstrings and bare `...` statements (what a quote may leave out)."""
    tree = ast.parse(ast.unparse(tree))
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [s for s in body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
                                            and (isinstance(s.value.value, str) or s.value.value is Ellipsis))]
            node.body = kept or [ast.Pass()]  # type: ignore[attr-defined]
    return tree


def shape(tree: ast.Module) -> str:
    """The program without formatting, comments and docstrings: two programs of one shape mean the same."""
    try:
        return ast.dump(_strip(tree))
    except (RecursionError, MemoryError, SyntaxError, ValueError):
        return ast.dump(tree) if tree is not None else ""


def _tokens(tree: ast.Module) -> list[str]:
    code = ast.unparse(_strip(tree))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER,
            tokenize.ENCODING}
    return [t.string for t in tokenize.generate_tokens(io.StringIO(code).readline) if t.type not in skip]


def novelty(src: Source, known: Source) -> float:
    """The share of the program's tokens (formatting, comments, docstrings and `...` aside) that the known program
    does not hold in the same order: 0.0 for an exact or abridged quote, above 0 as soon as one name, number or
    operator is new. Measured with difflib's matching blocks; 1.0 when a program is too large to measure."""
    mine, theirs = src.tokens(), known.tokens()
    if not mine or not theirs or len(mine) > _MAX_TOKENS or len(theirs) > _MAX_TOKENS:
        return 1.0
    matcher = difflib.SequenceMatcher(None, mine, theirs, autojunk=False)
    return 1.0 - sum(b.size for b in matcher.get_matching_blocks()) / len(mine)
