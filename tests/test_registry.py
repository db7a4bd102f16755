"""The registry, the schema and the conf groups agree; no code branches on a method's name."""

import ast
import tomllib
from pathlib import Path

from bird import registry
from bird.config.load import CONF_DIR
from bird.config.validate import REGISTRY_KEYS

ROOT = Path(__file__).resolve().parents[1]
CODE_DIRS = ("bird", "methods", "envs", "analysis")


def test_every_registry_key_in_the_schema_names_a_populated_family():
    for key, family in REGISTRY_KEYS.items():
        assert registry.names(family), f"{key}: family {family} is empty"


def test_llm_options_are_registered_backends():
    for path in (CONF_DIR / "llm").glob("*.yaml"):
        assert path.stem in registry.names("llm")


def test_duplicate_registration_is_an_error():
    import pytest

    registry.register("test_family", "x")(object())
    with pytest.raises(ValueError):
        registry.register("test_family", "x")(object())


def _method_names() -> set[str]:
    return {p.stem for p in (CONF_DIR / "method").glob("*.yaml")}


def _is_config(node: ast.Attribute) -> bool:
    """`cfg.method` / `config.method`: the method name on a config object."""
    return isinstance(node.value, ast.Name) and "cfg" in node.value.id or getattr(node.value, "id", "") == "config"


def _branch_offenders(source: str, names: set[str], where: str) -> list[str]:
    """Places in `source` whose condition compares with a method name or reads `cfg.method`."""
    offenders = []
    for node in ast.walk(ast.parse(source)):
        tests = [node.test] if isinstance(node, (ast.If, ast.IfExp, ast.While)) else []
        tests += [node.subject] if isinstance(node, ast.Match) else []
        tests += [node] if isinstance(node, ast.Compare) else []
        for test in tests:
            for sub in ast.walk(test):
                if isinstance(sub, ast.Constant) and sub.value in names:
                    offenders.append(f"{where}:{sub.lineno} compares with {sub.value!r}")
                if isinstance(sub, ast.Attribute) and sub.attr == "method" and _is_config(sub):
                    offenders.append(f"{where}:{sub.lineno} branches on .method")
    return sorted(set(offenders))


def test_branch_detector_flags_method_name_branches():
    source = "if cfg.method == 'x':\n    pass\ny = 1 if name == 'eureka' else 2\nwhile kind != 'grace':\n    pass\n"
    assert _branch_offenders(source, {"eureka", "grace"}, "snippet") == [
        "snippet:1 branches on .method", "snippet:3 compares with 'eureka'", "snippet:4 compares with 'grace'"]
    assert _branch_offenders("if cfg.generate.parent == 'latest':\n    pass\n", {"eureka"}, "snippet") == []


def test_no_code_branches_on_a_method_name():
    names = _method_names()
    offenders = []
    for folder in CODE_DIRS:
        for path in (ROOT / folder).rglob("*.py"):
            offenders += _branch_offenders(path.read_text(), names, str(path.relative_to(ROOT)))
    assert not offenders, "\n".join(offenders)


def test_every_package_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    mapping = {"bird": "bird", "methods": "bird.methods", "envs": "bird.envs", "analysis": "bird.analysis"}
    found = set()
    for folder, pkg in mapping.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder)
            if "notebooks" in rel.parts or "__pycache__" in rel.parts:
                continue
            found.add(".".join([pkg, *rel.parts]))
    assert found <= listed, f"missing from pyproject packages: {sorted(found - listed)}"
