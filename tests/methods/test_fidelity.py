"""Fidelity tables cannot drift from the configs: every key a method YAML sets has a row in methods/<name>/README.md
with the same value, a source, and a verdict (paper / BIRD / both / neither, a reason for neither); every substitute
is listed; docs/fidelity.md indexes every method with a verdict."""

import re
from pathlib import Path

import pytest
import yaml

from bird.config.load import CONF_DIR
from bird.config.validate import METHODS_DIR

ROOT = Path(__file__).resolve().parents[2]
METHODS = sorted(p.stem for p in (CONF_DIR / "method").glob("*.yaml"))
MATCHES = {"paper", "BIRD", "both", "neither"}
VERDICTS = ("faithful with labelled substitutes", "faithful", "port")


def _flatten(d: dict, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        out.update(_flatten(v, key + ".") if isinstance(v, dict) else {key: v})
    return out


def yaml_keys(method: str) -> dict[str, object]:
    """Every key the method file sets (dotted), with its value as written."""
    text = (CONF_DIR / "method" / f"{method}.yaml").read_text()
    return _flatten(yaml.safe_load(text))


def table_rows(readme: str) -> dict[str, list[str]]:
    """Rows of every markdown table whose first cell is a `key`: key -> [value, source, matches, note]."""
    rows = {}
    for line in readme.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        if line.startswith("|") and len(cells) >= 5 and re.fullmatch(r"`[\w.]+`", cells[0]):
            rows[cells[0].strip("`")] = cells[1:5]
    return rows


def _value(cell: str) -> object:
    return yaml.safe_load(cell.strip("`")) if cell.startswith("`") else cell


@pytest.mark.parametrize("method", METHODS)
def test_every_key_a_method_yaml_sets_has_a_row_with_its_value_source_and_verdict(method):
    readme = (METHODS_DIR / method / "README.md").read_text()
    rows = table_rows(readme)
    missing = [k for k in yaml_keys(method) if k not in rows]
    assert not missing, f"methods/{method}/README.md has no row for {missing}"
    for key, value in yaml_keys(method).items():
        shown, source, matches, note = rows[key]
        if key != "substitutes":
            assert _value(shown) == value, f"{key}: table says {shown}, {method}.yaml says {value!r}"
        assert source and source != "—" or key == "method", f"{key}: no source"
        assert matches in MATCHES, f"{key}: matches must be one of {sorted(MATCHES)}, got {matches!r}"
        assert matches != "neither" or len(note) > 10, f"{key}: 'neither' needs a reason"


@pytest.mark.parametrize("method", METHODS)
def test_every_substitute_is_listed_in_the_methods_table(method):
    readme = (METHODS_DIR / method / "README.md").read_text()
    for sub in yaml_keys(method).get("substitutes", []):
        assert sub in readme, f"methods/{method}/README.md does not list the substitute {sub!r}"


def test_fidelity_index_gives_every_method_a_verdict_and_links_its_table():
    index = (ROOT / "docs" / "fidelity.md").read_text()
    for method in METHODS:
        row = next((line for line in index.splitlines() if line.startswith(f"| [`{method}`]")), None)
        assert row, f"docs/fidelity.md has no row for {method}"
        assert f"../methods/{method}/README.md" in row
        assert any(f"**{v}**" in row for v in VERDICTS), f"{method}: no verdict among {VERDICTS}"


def test_the_coverage_check_fails_on_a_table_that_misses_or_misstates_a_key():
    """Positive control: a table with a missing row and a wrong value is caught by the same parser."""
    good = "| `generate.n_candidates` | `8` | BIRD Table 8 | both | |\n| `loop.iterations` | `5` | BIRD Table 8 | both | |"
    rows = table_rows(good)
    assert set(rows) == {"generate.n_candidates", "loop.iterations"} and _value(rows["loop.iterations"][0]) == 5
    assert "feedback.fitness" not in table_rows(good)
    assert _value(table_rows(good.replace("`5`", "`3`"))["loop.iterations"][0]) != 5
