"""bird's import graph, read from the source with `ast` (imports inside functions count), and its layer order.

`python tools/layers.py` prints the layers, any import that points up a layer and any import circle;
`python tools/layers.py --mermaid` prints the layer diagram that docs/architecture.md embeds, and
`python tools/layers.py --update-docs` rewrites it there.
tests/test_layering.py asserts there is neither.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# source folder -> the package it installs as (pyproject's package-dir)
PACKAGE_DIRS = {"bird": "bird", "envs": "bird.envs", "analysis": "bird.analysis", "methods": "bird.methods"}

# Lowest first. A module may import modules of its own layer and of the layers below it, never above.
# A name matches a module and everything under it. `__main__` modules (command lines) sit in the top layer.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("bird.types", "bird.registry", "bird.plugins", "bird.config", "bird.methods", "bird.files",
              "bird.escape", "bird.runlock", "bird.completed", "bird.progress", "bird.jax_cache", "bird.environment",
              "bird.fidelity", "bird.state_codec", "bird.sealed", "bird.lifetime")),
    ("envs", ("bird.envs",)),
    ("llm", ("bird.llm",)),
    ("reward", ("bird.reward",)),
    ("learners", ("bird.learners",)),
    ("executors", ("bird.executors", "bird.tracking")),
    ("search state", ("bird.state", "bird.prompts", "bird.checkpoint", "bird.rundir")),
    ("components", ("bird.components",)),
    ("stages", ("bird.stages",)),
    ("loop", ("bird.loop", "bird.result")),
    ("applications", ("bird.__main__", "bird.hydra_guard", "bird.resume", "bird.sweeps", "bird.ablate", "bird.diff",
                      "bird.leaks", "bird.status", "bird.method_branches", "bird.analysis", "bird.annotate", "bird.bundle",
                      "bird.plan")),
)


@dataclass(frozen=True)
class Edge:
    """`src` imports `dst` at `line` (inside a function when `deferred`)."""

    src: str
    dst: str
    line: int
    deferred: bool


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the installed `bird` namespace, by dotted name."""
    out: dict[str, Path] = {}
    for folder, package in PACKAGE_DIRS.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = [p for p in path.relative_to(root / folder).with_suffix("").parts if p != "__init__"]
            out[".".join([package, *parts])] = path
    return out


def _known(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _deferred_nodes(tree: ast.AST) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            inside.update(id(n) for n in ast.walk(node) if n is not node)
    return inside


def _targets(node: ast.Import | ast.ImportFrom, module: str, is_package: bool, known: dict[str, Path]) -> Iterable[str]:
    if isinstance(node, ast.Import):
        yield from (a.name for a in node.names)
        return
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level:
        base = base[: len(base) - (node.level - 1)]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    submodules = [f"{source}.{a.name}" for a in node.names if f"{source}.{a.name}" in known]
    yield from submodules
    if len(submodules) < len(node.names) and not module.startswith(source + "."):
        yield source  # names defined by the package itself (an importer's own ancestors load anyway)


def edges(root: Path = ROOT) -> list[Edge]:
    """Every import between two of bird's modules (an import of a package's ancestor by itself is left out)."""
    known = modules(root)
    out: list[Edge] = []
    for name, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        deferred = _deferred_nodes(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            for target in _targets(node, name, path.name == "__init__.py", known):
                dst = _known(target, known)
                if dst and dst != name and not name.startswith(dst + "."):
                    out.append(Edge(name, dst, node.lineno, id(node) in deferred))
    return out


def layer_of(module: str) -> int:
    """Index of the module's layer in LAYERS (command lines: the top layer)."""
    if module.endswith(".__main__"):
        return len(LAYERS) - 1
    if module == "bird":  # the namespace's empty root package
        return 0
    best, index = -1, None
    for i, (_, names) in enumerate(LAYERS):
        for n in names:
            if (module == n or module.startswith(n + ".")) and len(n) > best:
                best, index = len(n), i
    if index is None:
        raise KeyError(f"{module} is in no layer: add it to tools/layers.py LAYERS")
    return index


def upward(graph: list[Edge]) -> list[Edge]:
    """Imports that point to a higher layer."""
    return [e for e in graph if layer_of(e.dst) > layer_of(e.src)]


def cycles(graph: list[Edge]) -> list[list[str]]:
    """Import circles: strongly connected components of two or more modules (Tarjan)."""
    succ: dict[str, set[str]] = {}
    for e in graph:
        succ.setdefault(e.src, set()).add(e.dst)
        succ.setdefault(e.dst, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(succ[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    for v in sorted(succ):
        if v not in index:
            visit(v)
    return sorted(out)


def _reduced(pairs: set[tuple[int, int]]) -> list[tuple[int, int]]:
    """The layer-to-layer imports without those another path already implies (transitive reduction of a DAG)."""
    succ: dict[int, set[int]] = {}
    for a, b in pairs:
        succ.setdefault(a, set()).add(b)

    def reach(a: int, skip: tuple[int, int]) -> set[int]:
        seen, todo = set(), [b for b in succ.get(a, ()) if (a, b) != skip]
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo += succ.get(n, ())
        return seen

    return sorted(((a, b) for a, b in pairs if b not in reach(a, (a, b))), reverse=True)


def mermaid(graph: list[Edge]) -> str:
    """The layers as a mermaid flowchart, top layer first; an arrow for each layer-to-layer import that no other
    path of arrows already implies."""
    lines = ["flowchart TD"]
    for i, (name, members) in reversed(list(enumerate(LAYERS))):
        shown = ", ".join(m.removeprefix("bird.") for m in members)
        lines.append(f'    L{i}["<b>{name}</b><br/>{shown}"]')
    pairs = {(layer_of(e.src), layer_of(e.dst)) for e in graph if layer_of(e.src) != layer_of(e.dst)}
    lines += [f"    L{a} --> L{b}" for a, b in _reduced(pairs)]
    return "\n".join(lines)


DOC = ROOT / "docs" / "architecture.md"


def update_docs(graph: list[Edge]) -> None:
    """Replace the mermaid block of docs/architecture.md with the diagram the code gives now."""
    text = DOC.read_text()
    start = text.index("```mermaid\n") + len("```mermaid\n")
    end = text.index("```", start)
    DOC.write_text(text[:start] + mermaid(graph) + "\n" + text[end:])


def main(argv: list[str]) -> int:
    graph = edges()
    if "--mermaid" in argv:
        print(mermaid(graph))
        return 0
    if "--update-docs" in argv:
        update_docs(graph)
        return 0
    for i, (name, members) in enumerate(LAYERS):
        print(f"{i:2d} {name}: {', '.join(members)}")
    bad, circles = upward(graph), cycles(graph)
    for e in bad:
        where = "inside a function" if e.deferred else "at module level"
        print(f"upward: {e.src}:{e.line} imports {e.dst} ({where})")
    for c in circles:
        print("circle: " + " -> ".join(c))
    print(f"{len(modules())} modules, {len(graph)} imports ({sum(e.deferred for e in graph)} inside functions), "
          f"{len(bad)} upward, {len(circles)} circles")
    return 1 if bad or circles else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
