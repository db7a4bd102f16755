"""bird/config/secrets.py: which environment interpolations of a config would write a secret, one rule at a time, with
a harmless interpolation beside each refused one (the end-to-end refusal: tests/security/test_received_configs.py)."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from bird.config.secrets import secret_problems, string_leaves

SECRET = "sk-test-0123456789abcdef"


@pytest.fixture(autouse=True)
def environment(monkeypatch):
    monkeypatch.setenv("BIRDTEST_API_KEY", SECRET)
    monkeypatch.setenv("BIRDTEST_ALIAS", SECRET)          # another name for the same secret
    monkeypatch.setenv("BIRDTEST_PLAIN", "/home/someone")  # not a secret


def _problems(**keys: str) -> list[str]:
    cfg = OmegaConf.create()
    for key, value in keys.items():
        OmegaConf.update(cfg, key, value, force_add=True)
    return secret_problems(cfg)


def _where(problems: list[str]) -> list[str]:
    return [p.split(":")[0] for p in problems]


def test_string_leaves_are_every_string_of_a_tree_by_dotted_path_in_order():
    tree = {"a": {"b": "x", "n": 3, "c": [1, "y", {"d": "z"}, None]}, "e": "w", "f": True}
    assert string_leaves(tree) == [("a.b", "x"), ("a.c[1]", "y"), ("a.c[2].d", "z"), ("e", "w")]
    assert string_leaves("top") == [("", "top")]
    assert string_leaves(["p", ["q"]], "root") == [("root[0]", "p"), ("root[1][0]", "q")]
    assert string_leaves(4.5) == []


@pytest.mark.parametrize("name", ["BIRDTEST_API_KEY", "birdtest_token", "X_SECRET_Y", "DB_PASSWORD", "PASSWD",
                                  "GOOGLE_CREDENTIALS", "HF_AUTH"])
def test_an_interpolation_of_a_variable_named_like_a_secret_is_refused_set_or_not(name):
    problems = _problems(**{"llm.model": f"${{oc.env:{name}}}"})
    assert problems == [f"llm.model: an interpolation of the environment variable {name}, which holds a secret, would "
                        "write it into config.yaml, status.json, the journal and the terminal; bird refuses it (name "
                        "the variable with llm.api_key_env instead)"]


def test_an_interpolation_of_a_harmless_variable_is_allowed():
    assert _problems(**{"env.description": "${oc.env:BIRDTEST_PLAIN}", "run.name": "${env:BIRDTEST_UNSET}"}) == []


def test_another_variable_holding_a_secrets_value_is_refused_and_the_value_never_named():
    problems = _problems(**{"llm.model": "${oc.env:BIRDTEST_ALIAS}"})
    assert _where(problems) == ["llm.model"] and SECRET not in problems[0]


def test_values_shorter_than_eight_characters_are_not_searched_for(monkeypatch):
    monkeypatch.setenv("BIRDTEST_API_KEY", "1234567")
    monkeypatch.setenv("BIRDTEST_ALIAS", "1234567")
    assert _problems(a="${oc.env:BIRDTEST_ALIAS}") == []
    monkeypatch.setenv("BIRDTEST_API_KEY", "12345678")
    monkeypatch.setenv("BIRDTEST_ALIAS", "12345678")
    assert _where(_problems(a="${oc.env:BIRDTEST_ALIAS}")) == ["a"]


@pytest.mark.parametrize("key", ["llm.api_key_env", "judge.api_key_env"])
def test_the_variable_a_config_names_as_its_key_is_a_secret_whatever_its_name(monkeypatch, key):
    monkeypatch.setenv("BIRDTEST_PROVIDER", "short")
    cfg = {key: "BIRDTEST_PROVIDER", "llm.model": "${oc.env:BIRDTEST_PROVIDER}"}
    assert _where(_problems(**cfg)) == ["llm.model"]
    assert _problems(**{"llm.model": "${oc.env:BIRDTEST_PROVIDER}"}) == []


def test_a_key_variable_named_by_an_interpolation_that_does_not_resolve_is_ignored():
    assert _problems(**{"llm.api_key_env": "${missing.key}", "llm.model": "${oc.env:BIRDTEST_PLAIN}"}) == []


@pytest.mark.parametrize("text", ["${env:BIRDTEST_API_KEY}", "${ oc.env : BIRDTEST_API_KEY }",
                                  "${oc.env:'BIRDTEST_API_KEY'}", '${oc.env:"BIRDTEST_API_KEY",fallback}',
                                  "prefix ${oc.env:BIRDTEST_PLAIN} and ${oc.env:BIRDTEST_API_KEY}"])
def test_every_spelling_of_an_environment_interpolation_is_read(text):
    assert _where(_problems(**{"llm.model": text})) == ["llm.model"]


def test_each_leaf_and_each_interpolation_in_it_is_reported_and_nothing_is_resolved():
    cfg = OmegaConf.create({"a": ["ok", "${oc.env:BIRDTEST_API_KEY} ${oc.env:BIRDTEST_ALIAS}"],
                            "b": {"c": "${oc.env:X_TOKEN}"}, "d": "${no.such.key}"})
    assert _where(secret_problems(cfg)) == ["a[1]", "a[1]", "b.c"]
