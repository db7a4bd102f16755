"""The site's method pages, generated from each method's home: methods/<name>/README.md (its description and the
fidelity table that `python -m bird.fidelity --write` keeps in step with the config), one page per method.

A relative link to another method's folder or README becomes a link to that method's page; any other link into the
repository (a config file, a template folder) keeps its text and loses the link, since the site holds only docs/.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
METHODS = ROOT / "methods"

__all__ = ["page", "pages"]

_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")


def names() -> list[str]:
    """Methods with a README, in name order."""
    return sorted(p.parent.name for p in METHODS.glob("*/README.md"))


def _relink(name: str, text: str, known: set[str]) -> str:
    def one(m: re.Match) -> str:
        label, target = m.group(1), m.group(2)
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            return m.group(0)
        parts = (Path("methods") / name / target.split("#")[0]).as_posix().split("/")
        resolved = []
        for part in parts:
            if part == "..":
                resolved.pop()
            elif part not in ("", "."):
                resolved.append(part)
        if len(resolved) >= 2 and resolved[0] == "methods" and resolved[1] in known and (
                len(resolved) == 2 or resolved[2:] == ["README.md"]):
            return f"[{label}]({resolved[1]}.md)"
        return label
    return _LINK.sub(one, text)


def page(name: str) -> str:
    """The page of one method: its README with links made to work on the site."""
    text = (METHODS / name / "README.md").read_text()
    note = f"<!-- generated from methods/{name}/README.md by tools/method_pages.py: edit that file -->\n"
    return note + _relink(name, text, set(names()))


def pages() -> dict[str, str]:
    """docs path (methods/<name>.md) -> page text, for every method."""
    return {f"methods/{name}.md": page(name) for name in names()}
