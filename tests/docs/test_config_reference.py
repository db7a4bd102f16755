"""The configuration reference is generated from the schema: every key with its type, default and the docstring under
its field. A key without a docstring fails here."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

import config_reference  # noqa: E402

from bird.config.load import compose  # noqa: E402


def test_every_schema_key_has_a_description():
    keys = config_reference.all_keys()  # raises MissingDescription naming each key without one
    assert all(k.description for k in keys)


def test_the_reference_lists_every_key_a_composed_config_has():
    cfg = compose(["budget=smoke", "env=gym/pendulum"])
    paths = {k.path for k in config_reference.all_keys()}

    def walk(obj, prefix=""):
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            yield prefix + f.name
            if dataclasses.is_dataclass(value):
                yield from walk(value, prefix + f.name + ".")
            elif isinstance(value, list) and value and dataclasses.is_dataclass(value[0]):
                yield from walk(value[0], prefix + f.name + "[].")

    missing = sorted(set(walk(cfg)) - paths)
    assert not missing, missing
    assert {"env.task.fields[].name", "train.jax.num_envs", "tree.lambda0", "budget.max_cost_usd"} <= paths


def test_a_key_shows_its_type_default_and_description():
    key = next(k for k in config_reference.all_keys() if k.path == "generate.n_candidates")
    assert (key.type, key.default, key.section) == ("int", "8", "generate")
    assert key.description == "reward programs requested per iteration (K)"
    page = config_reference.render()
    assert "| `generate.n_candidates` | `int` | `8` | reward programs requested per iteration (K) |" in page
    assert "| `env.id` | `str` | `required` |" in page


@dataclass
class _Inner:
    described: int = 1
    """a value"""
    bare: str = "x"


@dataclass
class _Outer:
    inner: _Inner = field(default_factory=_Inner)
    """a section"""


def test_a_key_without_a_docstring_is_named(monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "_Inner", _Inner, raising=False)
    with pytest.raises(config_reference.MissingDescription, match=r"\['inner\.bare'\]"):
        config_reference.all_keys(_Outer)
