"""MkDocs hooks (mkdocs.yml `hooks:`): the pages generated on every build, so none of them is a copy that can go stale.

- `methods/<name>.md`: each method's README (tools/method_pages.py), added to the nav's "Methods" section;
- `reference/config.md`: every schema key with type, default and description (tools/config_reference.py);
- `reference/cli.md`: every command's --help (tools/cli_reference.py).

Links written for the repository (into methods/, examples/) are fixed for the site in `on_page_markdown`.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from mkdocs.structure.files import File, Files

sys.path.insert(0, str(Path(__file__).resolve().parent))

import cli_reference  # noqa: E402
import config_reference  # noqa: E402
import method_pages  # noqa: E402

METHODS_SECTION = "Methods"
ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def generated() -> dict[str, str]:
    """docs path -> content of every generated page."""
    return {**method_pages.pages(), "reference/config.md": config_reference.render(),
            "reference/cli.md": cli_reference.render()}


def on_config(config, **_):
    """Put each method's page in the nav's Methods section, after what mkdocs.yml lists there."""
    for item in config["nav"] or []:
        if isinstance(item, dict) and METHODS_SECTION in item:
            listed = {next(iter(e.values())) if isinstance(e, dict) else e for e in item[METHODS_SECTION]}
            item[METHODS_SECTION] += [{name: f"methods/{name}.md"} for name in method_pages.names()
                                      if f"methods/{name}.md" not in listed]
            return config
    raise ValueError(f"mkdocs.yml's nav has no {METHODS_SECTION!r} section for the generated method pages")


def on_files(files: Files, config, **_) -> Files:
    for path, content in generated().items():
        if files.get_file_from_path(path) is not None:
            raise ValueError(f"docs/{path} exists, but the build generates it: remove the file")
        files.append(File.generated(config, path, content=content))
    return files


_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)")


def out_of_docs(markdown: str, page_path: str) -> str:
    """Links that leave docs/ (written for reading the repository on a forge): one to a method's README becomes its
    page; one to another file of the repository keeps its text and loses the link; one to nothing fails the build."""
    page_dir = (DOCS / page_path).parent

    def one(m: re.Match) -> str:
        label, target = m.group(1), m.group(2)
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            return m.group(0)
        path = (page_dir / target.split("#")[0]).resolve()
        if path.is_relative_to(DOCS):
            return m.group(0)
        if not path.exists():
            raise ValueError(f"docs/{page_path} links to {target}, which does not exist")
        rel = path.relative_to(ROOT).parts
        if len(rel) >= 2 and rel[0] == "methods" and rel[1] in method_pages.names() and rel[2:] in ((), ("README.md",)):
            return f"[{label}]({os.path.relpath(DOCS / 'methods' / f'{rel[1]}.md', page_dir)})"
        return label

    parts = re.split(r"(^```.*?^```)", markdown, flags=re.M | re.S)
    return "".join(p if p.startswith("```") else _LINK.sub(one, p) for p in parts)


def on_page_markdown(markdown: str, page, **_) -> str:
    return out_of_docs(markdown, page.file.src_uri)
