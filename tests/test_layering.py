"""One direction of dependency (docs/architecture.md): no import points up a layer, nothing below the stages imports
them, and there is no import circle, counting imports made inside functions."""

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import layers  # noqa: E402

BELOW_STAGES = ("bird.components", "bird.reward", "bird.learners", "bird.llm", "bird.config", "bird.envs")


@pytest.fixture(scope="module")
def graph():
    return layers.edges()


def test_every_module_sits_in_a_layer(graph):
    for module in layers.modules():
        layers.layer_of(module)


def test_nothing_below_the_stages_imports_the_stages_or_the_loop(graph):
    bad = [e for e in graph if e.src.startswith(BELOW_STAGES) and e.dst.startswith(("bird.stages", "bird.loop"))]
    assert not bad, bad


def test_no_import_points_up_a_layer(graph):
    assert not layers.upward(graph), layers.upward(graph)


def test_no_import_circles(graph):
    assert not layers.cycles(graph), layers.cycles(graph)


def _copy(tmp_path: Path) -> Path:
    for folder in layers.PACKAGE_DIRS:
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__", "*.txt", "*.md"))
    return tmp_path


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def test_an_upward_import_inside_a_function_is_caught(tmp_path):
    root = _copy(tmp_path)
    _append(root / "bird/components/formats.py", "\n\ndef _late():\n    from bird.stages.feedback import feedback\n")
    found = [(e.src, e.dst, e.deferred) for e in layers.upward(layers.edges(root))]
    assert found == [("bird.components.formats", "bird.stages.feedback", True)]


def test_a_circle_hidden_inside_a_function_is_caught(tmp_path):
    root = _copy(tmp_path)  # formats imports fitness at module level; fitness now imports formats back, late
    _append(root / "bird/components/fitness.py", "\n\ndef _late():\n    from bird.components import formats\n")
    assert layers.cycles(layers.edges(root)) == [["bird.components.fitness", "bird.components.formats"]]


def test_the_diagram_in_the_docs_is_the_one_the_code_gives(graph):
    assert layers.mermaid(graph) in layers.DOC.read_text(), "run: python tools/layers.py --update-docs"
