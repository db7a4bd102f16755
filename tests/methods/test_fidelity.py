"""Fidelity tables cannot drift from the configs: every key a method YAML sets has a row in methods/<name>/fidelity.yaml
with the same value, a source and a verdict (paper / BIRD / both / neither, a reason for neither); the README tables
are the rendering of those files; the inherited rows and BIRD's matched protocol (methods/protocol.yaml) are what
budget=matched resolves to; docs/fidelity.md indexes every method with a verdict."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from bird import fidelity
from bird.config.load import CONF_DIR
from bird.config.validate import METHODS_DIR
from bird.result import substitutes

ROOT = Path(__file__).resolve().parents[2]
METHODS = sorted(p.stem for p in (CONF_DIR / "method").glob("*.yaml"))
ALL_CONFIGS = fidelity.methods()  # the hill-climb steps too (method=hillclimb/<step>)
VERDICTS = ("faithful with labelled substitutes", "faithful", "port")


@pytest.mark.parametrize("method", ALL_CONFIGS)
def test_every_key_a_method_yaml_sets_has_a_row_with_its_value_source_and_verdict(method):
    assert fidelity.table_problems(method) == []


def test_every_readme_table_is_the_rendering_of_its_data():
    assert fidelity.stale_documents() == [], "run `python -m bird.fidelity --write`"


@pytest.mark.parametrize("method", ALL_CONFIGS)
def test_every_substitute_is_listed_in_the_methods_readme(method):
    readme = (METHODS_DIR / method / "README.md").read_text()
    for sub in fidelity.config_values(method).get("substitutes", []):
        assert sub in readme, f"methods/{method}/README.md does not list the substitute {sub!r}"


@pytest.mark.parametrize("method", [m for m in ALL_CONFIGS if fidelity.load_table(m).inherited])
def test_inherited_rows_are_what_budget_matched_resolves(compose_cfg, method):
    cfg = compose_cfg(f"method={method}", "budget=matched")
    for key, row in fidelity.load_table(method).inherited.items():
        if key != "llm.backend":  # the smoke fixture's generator; the row states bird's default, offline
            assert fidelity._plain(fidelity._get(cfg, key)) == row.value, f"{method}: {key}"


@pytest.mark.parametrize("method", ["eureka", "rda", "card"])
def test_the_protocol_rows_are_what_budget_matched_resolves_for_every_method(compose_cfg, method):
    from bird.config.load import compose

    cfg = compose([f"method={method}", "budget=matched", "llm.model=claude-opus-5"])
    assert fidelity.protocol_differences(cfg) == []
    assert cfg.train.n_steps == 2048 and not cfg.train.normalize_obs and cfg.budget.n_envs == 1


def test_a_difference_from_the_matched_protocol_is_labelled_for_result_json():
    from bird.config.load import compose

    cfg = compose(["method=eureka", "budget=matched", "trainer=sb3_tuned", "llm.model=claude-opus-5"])
    labels = fidelity.config_substitutes(cfg)
    assert {"train.n_envs=8", "train.n_steps=512", "train.normalize_obs=true", "train.normalize_reward=true"} == {
        lab.split(": ")[1].split(" where")[0] for lab in labels if lab.startswith("budget=matched")}
    assert fidelity.protocol_differences(compose(["method=eureka", "trainer=sb3_tuned"])) == []  # not matched
    recorded = substitutes(cfg, SimpleNamespace(judge=None, substitutes=["run time"], spec=SimpleNamespace(extra={})))  # result.json's list
    assert set(labels) < set(recorded) and "run time" in recorded


def test_the_report_resolves_values_through_the_chain_and_marks_protocol_differences(compose_cfg):
    from bird.config.load import compose

    cfg = compose(["method=era_u", "budget=matched", "trainer=sb3_tuned"])
    rows = {key: (name, value, v) for name, key, value, v in fidelity.resolved(cfg, "era_u")}
    assert rows["generate.n_candidates"][:2] == ("era_u", 8) and rows["judge.repeats"][:2] == ("era_u", 2)
    assert rows["generate.design_thought"][0] == "era_u" and rows["generate.prompt"][:2] == ("rda", "rda")
    assert rows["final.seeds"][:2] == ("rda", 3)
    assert rows["train.n_steps"][0] == "protocol" and rows["train.n_steps"][2].matches == "neither"
    assert rows["budget.n_checkpoints"][2].matches == "BIRD"


def test_the_fidelity_index_gives_every_method_a_verdict_and_links_its_table():
    index = (ROOT / "docs" / "fidelity.md").read_text()
    for method in METHODS:
        row = next((line for line in index.splitlines() if line.startswith(f"| [`{method}`]")), None)
        assert row, f"docs/fidelity.md has no row for {method}"
        assert f"../methods/{method}/README.md" in row
        assert any(f"**{v}**" in row for v in VERDICTS), f"{method}: no verdict among {VERDICTS}"


def test_the_checks_catch_a_misstated_missing_or_stale_row(monkeypatch):
    """Positive controls: a config value the data file does not state, a key it lacks, a README table edited by hand."""
    real = fidelity.config_values
    monkeypatch.setattr(fidelity, "config_values",
                        lambda m: {**real(m), "loop.iterations": 3, "generate.temperature_new": 1})
    problems = " ".join(fidelity.table_problems("rda"))
    assert "loop.iterations: fidelity.yaml says 5, the config 3" in problems and "temperature_new" in problems
    monkeypatch.setattr(fidelity, "config_values", real)
    readme = (METHODS_DIR / "rda" / "README.md").read_text()
    edited = readme.replace("| `judge.repeats` | `1` |", "| `judge.repeats` | `2` |")
    assert edited != readme and fidelity.render_readme("rda", edited) == readme


def test_the_command_prints_each_resolved_value_with_source_and_verdict(capsys):
    assert fidelity.main(["card", "budget=matched"]) == 0
    out = capsys.readouterr().out
    assert "generate.parse_retries = 10\n    [BIRD] BIRD paper Table 9: 10 repairs" in out
    assert "budget.eval_episodes = 3\n    [BIRD]" in out and "train.n_steps = 2048\n    [BIRD]" in out
    assert "== substitutes (as result.json records them)" in out
    assert fidelity.main(["card"]) == 0
    assert "generate.parse_retries = 9\n    [paper] CARD release" in capsys.readouterr().out  # the own budget
    assert fidelity.main(["--check"]) == 0
