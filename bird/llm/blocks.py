"""The fenced code blocks of an LLM answer, as models write them: ``` or ~~~ fences of any length, indented or not,
tagged (`python`, `py`, `Python`, `json`, ...) or not, closed or cut off by the end of the answer, nested (a
````markdown block wrapping a ```python one)."""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, replace

__all__ = ["Block", "fenced_blocks", "outside_blocks", "PYTHON_TAGS"]

#: Info-string words (lower-cased, version digits dropped) that mark a block as Python; an untagged block may be too.
PYTHON_TAGS = frozenset({"python", "py", "python3", "py3", "ipython", "pycon"})
_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")  # linear: no nested quantifiers


@dataclass(frozen=True)
class Block:
    """One fenced block: `text` dedented, `tag` the first word of the info string lower-cased ('' when untagged),
    `start`/`end` the 1-based answer lines of its content, `closed` False when the answer ends inside it."""

    index: int  # 1-based, in answer order
    tag: str
    text: str
    start: int
    end: int
    closed: bool
    span: tuple[int, int] = (0, 0)  # 1-based answer lines of the whole block, fences included

    @property
    def python_tagged(self) -> bool:
        return self.tag in PYTHON_TAGS

    def label(self) -> str:
        """How the block is named in messages: `block 2 (```python, lines 5-20)`."""
        fence = f"```{self.tag}" if self.tag else "untagged"
        cut = ", never closed" if not self.closed else ""
        return f"block {self.index} ({fence}, lines {self.start}-{self.end}{cut})"


def _tag(info: str) -> str:
    """`Python`, `py:reward.py`, `{.python}`, `python title="r.py"` -> python; `JSON` -> json."""
    word = re.split(r"[\s:,;{}=]+", info.strip().lstrip("{.").strip())[0] if info.strip() else ""
    return word.lower().lstrip(".")


def _parses(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _nested(body: list[str], tag: str) -> bool:
    """A block that is not Python (tagged otherwise, or untagged and not parsing) whose lines open fences: a
    wrapper (````markdown around ```python): its inner blocks are read instead."""
    if tag in PYTHON_TAGS or not any(_OPEN.match(line) for line in body):
        return False
    return bool(tag) or not _parses(textwrap.dedent("\n".join(body)))


def fenced_blocks(text: str) -> list[Block]:
    """Every fenced block of `text`, in order. A closing fence is a fence of the same character at least as long as
    the opening one; a fence line with an info string inside a block closes it and opens the next (a model that
    forgot to close a block); a fence at the end of a code line closes the block after that line. The blocks inside
    a wrapper block take its place (`_nested`)."""
    out: list[Block] = []
    for block in _blocks((text or "").splitlines(), 0):
        out.append(replace(block, index=len(out) + 1))
    return out


def _blocks(lines: list[str], offset: int, depth: int = 0) -> list[Block]:
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _OPEN.match(lines[i])
        if m is None:
            i += 1
            continue
        fence, tag = m["fence"], _tag(m["info"])
        body: list[str] = []
        j, closed, reopen, last = i + 1, False, False, len(lines)
        while j < len(lines):
            line = lines[j]
            inner = _OPEN.match(line)
            if inner is not None and inner["fence"][0] == fence[0] and len(inner["fence"]) >= len(fence):
                closed, reopen, last = True, bool(inner["info"].strip()), j + 1
                break
            if line.rstrip().endswith(fence) and line.strip() != fence and not line.lstrip().startswith(fence[0] * 3):
                body.append(line.rstrip()[: -len(fence)])
                closed, last = True, j + 1
                break
            body.append(line)
            j += 1
        if depth < 3 and _nested(body, tag):
            blocks += _blocks(body, offset + i + 1, depth + 1)
        else:
            blocks.append(Block(0, tag, textwrap.dedent("\n".join(body)).rstrip().lstrip("\n"), offset + i + 2,
                                offset + i + 1 + len(body), closed, (offset + i + 1, offset + last)))
        i = j if reopen else j + 1
    return blocks


def outside_blocks(text: str) -> str:
    """`text` with every fenced block (fences included) replaced by a blank line: the prose of an answer."""
    lines = (text or "").splitlines()
    keep = [True] * len(lines)
    for b in fenced_blocks(text):
        for k in range(b.span[0] - 1, b.span[1]):
            keep[k] = False
    return "\n".join(line if ok else "" for line, ok in zip(lines, keep, strict=True))
