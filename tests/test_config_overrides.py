"""Overrides outside Hydra (bird.resume, bundle replay: bird/config/overrides.py) read Hydra's prefixes as Hydra
defines them (https://hydra.cc/docs/advanced/override_grammar/basic/): `+key=value` adds a key the config lacks,
`++key=value` sets or adds, `~key` deletes; a plain `key=value` sets a key the config has. Every misuse is a config
error naming the override."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from omegaconf import OmegaConf

from bird.config.errors import ConfigError
from bird.config.overrides import apply_overrides, override_data, override_keys
from bird.config.received import adopt
from bird.config.received_task import received_task
from bird.config.schema import BirdConfig


@dataclass
class _Section:
    b: int = 2


@dataclass
class _Typed:
    a: _Section = field(default_factory=_Section)


def _cfg(**data):  # noqa: ANN003, ANN202 - a plain (open) config
    return OmegaConf.create(data)


def test_each_prefix_does_what_hydra_defines():
    cfg = _cfg(a={"b": 1, "c": 2}, d=None)
    apply_overrides(cfg, ["a.b=10", "+a.e=5", "++a.c=20", "++a.f=6", "+d=7", "~a.e"])
    assert OmegaConf.to_container(cfg) == {"a": {"b": 10, "c": 20, "f": 6}, "d": 7}  # d was None: absent to `+`


@pytest.mark.parametrize("override, message", [
    ("+a.b=3", r"override '\+a\.b=3': a\.b is already in the config; drop the \+ to set it \(a\.b=3\), or write "
               r"\+\+a\.b=3 to set or add it"),
    ("~a.x", r"override '~a\.x': a\.x is not in the config; nothing to delete"),
    ("~a.b=5", r"override '~a\.b=5': a\.b does not hold 5; delete it with ~a\.b"),
    ("a.x=1", r"override 'a\.x=1': a\.x is not in the config \(\+a\.x=1 adds a key to a section that takes new ones\)"),
    ("a.b=lots", r"override 'a\.b=lots': "),
])
def test_a_misused_prefix_or_a_bad_value_is_a_config_error_naming_the_override(override, message):
    cfg = OmegaConf.merge(OmegaConf.structured(_Typed), {})
    with pytest.raises(ConfigError, match=f"^{message}"):
        apply_overrides(cfg, [override])


def test_keys_and_data_are_read_without_the_prefix_and_a_deletion_gives_no_data():
    overrides = ["++a.b=1", "+c=[x]", "~d", "e=x=y", " f =3"]
    assert override_keys(overrides) == {"a.b", "c", "d", "e", "f"}
    assert override_data(overrides) == {"a": {"b": 1}, "c": ["x"], "e": "x=y", "f": 3}


def test_resume_and_replay_take_hydras_prefixes_for_the_local_values_and_the_users_keys():
    received = {"ray": {"address": "far:1"}, "env": {"id": "gym/x", "task": {"make": "plug:Env"}}}
    data, notes = adopt(received, ["++ray.address=near:2", "++plugins=[plug]"])
    assert (data["ray"], notes) == ({"address": "far:1"}, [])  # the user's key: the override, merged later, decides
    assert received_task(received["env"], ["++plugins=[plug]"]) == ([], None)  # a plugin the user named
    _, refusal = received_task(received["env"], ["++plugins=[other]"])
    assert refusal is not None and "env.task.make='plug:Env'" in refusal
    with pytest.raises(ConfigError, match=r"override '\+ray\.address=near:2': ray\.address is already in the config"):
        adopt(received, ["+ray.address=near:2"])  # a key every config has: + is Hydra's error, named


def test_the_schemas_own_keys_take_a_plain_override_and_refuse_to_be_added_again():
    cfg = OmegaConf.merge(OmegaConf.structured(BirdConfig), {"train": {"workers": 1}})
    apply_overrides(cfg, ["train.workers=3"])
    assert cfg.train.workers == 3
    with pytest.raises(ConfigError, match=r"^override 'no_such\.key=1': no_such\.key is not in the config"):
        apply_overrides(cfg, ["no_such.key=1"])
    with pytest.raises(ConfigError, match=r"^override '~train\.workers': .*does not support deletion"):
        apply_overrides(cfg, ["~train.workers"])  # as under Hydra: a schema key is set, never deleted
    assert cfg.train.workers == 3


def test_a_key_only_the_received_config_has_can_be_deleted_and_is_then_the_users():
    received = {"env": {"id": "gym/x", "task": {"make": "Hopper-v5", "kwargs": {"path": "/etc/x", "n": 1}}}}
    assert received_task(received["env"])[1] is not None  # a path the received task names: refused as it stands
    assert adopt(received, ["~env.task.kwargs.path"]) == (received, [])  # deleted by the override, merged later
    with pytest.raises(ConfigError, match=r"^override '~env\.task\.kwargs\.other': env\.task\.kwargs\.other is not"):
        adopt(received, ["~env.task.kwargs.other"])
