"""The configuration reference, generated from the schema: every key of bird/config/schema.py with its type, default
and the docstring under its field (the one place a key is described).

    python tools/config_reference.py           # print the page (the docs site makes it on every build)

`all_keys()` raises MissingDescription naming every key without a docstring (tests/docs/test_config_reference.py).
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from omegaconf import MISSING  # noqa: E402

from bird.config import schema  # noqa: E402

__all__ = ["Key", "MissingDescription", "all_keys", "render"]


@dataclass(frozen=True)
class Key:
    """One schema key: dotted path (`[]` marks a list's items), type as written, default as YAML shows it."""

    path: str
    type: str
    default: str
    description: str
    section: str


class MissingDescription(ValueError):
    """Schema keys without a docstring under their field."""


def field_docs(cls: type) -> dict[str, str]:
    """field name -> the string literal right under its annotated assignment in the class body."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    docs = {}
    for node, nxt in zip(body, [*body[1:], None], strict=True):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant) and isinstance(nxt.value.value, str)):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


def _dataclass_in(annotation: str, module: Any) -> tuple[type | None, bool]:
    """(the schema dataclass an annotation names, whether it is a list of them)."""
    inner = re.fullmatch(r"list\[(\w+)\]", annotation)
    name = inner.group(1) if inner else annotation.replace(" | None", "")
    cls = getattr(module, name, None)
    return (cls, bool(inner)) if dataclasses.is_dataclass(cls) else (None, False)


def _default(f: dataclasses.Field) -> str:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return "required"
    if value == MISSING:
        return "required"
    if dataclasses.is_dataclass(value):
        return "(section)"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return repr(value) if isinstance(value, str) else str(value)


def _walk(cls: type, prefix: str, out: list[Key], missing: list[str]) -> None:
    module = sys.modules[cls.__module__]
    docs = field_docs(cls)
    for f in dataclasses.fields(cls):
        path = f"{prefix}{f.name}"
        annotation = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
        if f.name not in docs:
            missing.append(path)
        out.append(Key(path, annotation, _default(f), docs.get(f.name, ""), prefix.rstrip(".") or "(top level)"))
        sub, is_list = _dataclass_in(annotation, module)
        if sub is None:
            sub, is_list = _dataclass_in(annotation, schema)
        if sub is not None:
            _walk(sub, f"{path}[]." if is_list else f"{path}.", out, missing)


def all_keys(root: type = schema.BirdConfig) -> list[Key]:
    """Every key under `root`, depth first, in the schema's order; MissingDescription if one has no docstring."""
    out: list[Key] = []
    missing: list[str] = []
    _walk(root, "", out, missing)
    if missing:
        raise MissingDescription(f"schema keys without a docstring under their field: {missing}")
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def render() -> str:
    """The reference page (Markdown): one table per section, sections in the schema's order."""
    lines = ["# Configuration reference", "",
             "Every key of the typed schema (`bird/config/schema.py`, `bird/config/search.py`), with its type, its "
             "default and what it does, generated from the docstring under each field. Set a key on the command line "
             "(`python -m bird generate.n_candidates=4`) or in a config file; an option file of a group "
             "(`method=`, `budget=`, ...) sets several at once. A key marked `[]` belongs to each item of a list. "
             "`python -m bird --cfg job` prints what a composition resolves to; `python -m bird.diff A B` the keys "
             "where two methods differ.", ""]
    section = None
    for key in all_keys():
        if key.section != section:
            section = key.section
            lines += ["", f"## `{section}`" if section != "(top level)" else "## Top level", "",
                      "| key | type | default | description |", "|---|---|---|---|"]
        lines.append(f"| `{key.path}` | `{key.type}` | `{key.default}` | {_cell(key.description)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
