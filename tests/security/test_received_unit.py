"""bird/config/received.py and bird/config/received_task.py as functions: which received keys are replaced, kept,
refused or trusted, and which entries of a received task section name code or files, each rule with the data case
beside the refused one (the commands end to end: test_received_configs.py and test_received_tasks.py here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bird.config import received
from bird.config.load import CONF_DIR, ConfigError
from bird.config.received import AUTHORITY, add_authority_key, adopt, load_received
from bird.config.received_task import (
    DATA_TARGETS,
    LOADER_IDS,
    check_received_task,
    named_code,
    on_search_path,
    received_task,
)

HOPPER_ENTRY = "gymnasium.envs.mujoco.hopper_v5:HopperEnv"


# --- a received task section --------------------------------------------------------------------------------------
def test_a_task_of_registered_ids_data_targets_and_bird_or_gymnasium_sources_names_no_code():
    task = {"make": "Hopper-v5", "kwargs": {"ctrl_cost_weight": 0.1, "name": "plain", "sizes": [1, "a"]},
            "wrappers": [{"target": "gymnasium.wrappers:ClipAction"}, "gymnasium.wrappers:FlattenObservation"],
            "score": {"function": "bird.envs.gym.metrics:hop_minus_drift"}, "success": {"function": None},
            "reference_reward": "none", "source": {"file": "gymnasium.envs.mujoco.hopper_v5"}}
    assert named_code(task) == []
    assert named_code({"make": HOPPER_ENTRY, "source": {"file": "bird.envs.gym.source"}}) == []
    assert named_code({"make": "Unknown-v0", "reference_reward": "env"}) == []  # an id: gymnasium names it unknown
    assert named_code({}) == []


@pytest.mark.parametrize("make", ["os:system", "my_module:Env", *sorted(LOADER_IDS)])
def test_a_make_that_is_not_a_registered_id_or_entry_point_is_code(make):
    assert named_code({"make": make}) == [("env.task.make", make)]


def test_targets_inside_a_named_plugin_are_the_users_and_a_prefix_is_not_inside():
    task = {"make": "plug.envs:Env", "wrappers": ["plug:Wrap", "plugx:Wrap"], "score": {"function": "plug.m:score"}}
    assert named_code(task, ["plug"]) == [("env.task.wrappers[1].target", "plugx:Wrap")]
    assert named_code(task) == [("env.task.make", "plug.envs:Env"), ("env.task.wrappers[0].target", "plug:Wrap"),
                                ("env.task.wrappers[1].target", "plugx:Wrap"), ("env.task.score.function",
                                                                               "plug.m:score")]


def test_kwargs_that_read_as_paths_are_files_wherever_they_sit():
    task = {"kwargs": {"xml_file": "/etc/passwd", "list": ["./a", "~/b", "c\\d", ".hidden", "plain", 3],
                       "nested": {"f": "sub/dir.xml", "ok": "name"}},
            "wrappers": [{"target": "gymnasium.wrappers:ClipAction", "kwargs": {"path": "x/y"}}, "junk-not-dict"]}
    assert named_code(task) == [
        ("env.task.kwargs.xml_file", "/etc/passwd"), ("env.task.kwargs.list[0]", "./a"),
        ("env.task.kwargs.list[1]", "~/b"), ("env.task.kwargs.list[2]", "c\\d"), ("env.task.kwargs.list[3]", ".hidden"),
        ("env.task.kwargs.nested.f", "sub/dir.xml"), ("env.task.wrappers[0].kwargs.path", "x/y"),
        ("env.task.wrappers[1].target", "junk-not-dict")]


def test_every_data_target_is_data_and_a_non_string_target_is_code():
    for target in DATA_TARGETS:
        assert named_code({"wrappers": [{"target": target}]}) == []
    assert named_code({"score": {"function": 5}, "success": {"function": ["x"]}, "wrappers": [{"target": None}]}) == [
        ("env.task.wrappers[0].target", None), ("env.task.score.function", 5), ("env.task.success.function", ["x"])]
    assert named_code({"wrappers": {"target": "os:system"}, "score": "os:system"}) == []  # malformed: the schema's


def test_a_reference_reward_other_than_env_or_none_is_code_unless_data():
    assert named_code({"reference_reward": "os:system"}) == [("env.task.reference_reward", "os:system")]
    assert named_code({"reference_reward": "bird.envs.gym.metrics:hop_minus_drift"}) == []


@pytest.mark.parametrize("file", ["os", "/etc/passwd", "birdx.envs", "gymnasiumx", "bird..x", 5, "bird/envs"])
def test_a_source_file_outside_bird_and_gymnasium_is_a_file(file):
    assert named_code({"source": {"file": file}}) == [("env.task.source.file", file)]


def test_a_source_module_of_bird_gymnasium_or_a_plugin_is_data():
    for file in ("bird", "gymnasium", "bird.envs.gym.source", "plug.src"):
        assert named_code({"source": {"file": file}}, ["plug"]) == []


def test_received_task_refuses_naming_the_keys_the_id_and_the_ways_to_vouch():
    env = {"id": "gym/stranger", "task": {"make": "os:system", "score": {"function": "evil:f"}}}
    notes, refusal = received_task(env)
    assert notes == []
    assert refusal.startswith("the received task names code or files bird would import, call or read: "
                              "env.task.make='os:system', env.task.score.function='evil:f'. A received task")
    assert "(id 'gym/stranger', the same task section)" in refusal and "--trust-config" in refusal
    with pytest.raises(ConfigError, match="env.task.make='os:system'"):
        check_received_task(env)


def test_received_task_takes_code_under_trust_with_a_note():
    env = {"id": "gym/stranger", "task": {"make": "os:system"}}
    assert received_task(env, trust=True) == (["env.task names code or files (env.task.make='os:system'): taken as "
                                               "received (--trust-config)"], None)
    assert check_received_task(env, trust=True)[0].endswith("(--trust-config)")


@pytest.mark.parametrize("override", ["env.task.make=os:system", "+env.task.make=os:system", "++env.task.make=os:system",
                                      "env.task=null", "env=x"])
def test_a_key_the_user_gave_on_the_command_line_is_theirs(override):
    assert received_task({"id": "gym/x", "task": {"make": "os:system"}}, [override]) == ([], None)


def test_a_key_that_only_shares_a_prefix_with_the_users_is_not_theirs():
    _, refusal = received_task({"task": {"make": "os:system"}}, ["env.task.mak=1"])
    assert refusal is not None


def test_the_command_lines_task_keys_and_plugins_apply_before_checking():
    env = {"id": "gym/x", "task": {"make": "plug:Env"}}
    assert received_task(env, ["plugins=[plug]"]) == ([], None)
    assert received_task({"task": {"make": "Hopper-v5"}}, ["env.task.score.function=evil:f"]) == ([], None)
    _, refusal = received_task(env, ["plugins=[other]"])
    assert "env.task.make='plug:Env'" in refusal


def test_a_section_that_is_not_a_task_gives_nothing_and_bad_overrides_are_a_config_error():
    assert received_task(None) == ([], None)
    assert received_task({"task": "os:system"}) == ([], None)
    assert received_task({"id": "x"}) == ([], None)
    with pytest.raises(ConfigError, match="^overrides: "):
        received_task({"task": {"make": "os:system"}}, ["env.task=${"])


def test_a_path_is_on_the_search_path_only_under_a_config_folders_env():
    assert on_search_path(CONF_DIR / "env" / "gym" / "hopper.yaml")
    assert not on_search_path(CONF_DIR / "method" / "eureka.yaml")
    assert not on_search_path(Path("/tmp/env/gym/hopper.yaml"))


# --- a received config --------------------------------------------------------------------------------------------
def test_a_received_endpoint_is_replaced_by_the_local_value_and_noted():
    data, notes = adopt({"ray": {"address": "10.0.0.1:6379"}, "llm": {"model": "m"}}, [])
    assert data == {"ray": {"address": None}, "llm": {"model": "m"}}
    assert notes == ["ray.address: the received '10.0.0.1:6379' is ignored; the local None is used (--trust-config "
                     "takes the received value)"]


def test_a_received_endpoint_is_kept_under_trust_or_when_it_equals_the_local_one():
    data, notes = adopt({"ray": {"address": "10.0.0.1:6379"}}, [], trust=True)
    assert data == {"ray": {"address": "10.0.0.1:6379"}}
    assert notes == ["ray.address: the received '10.0.0.1:6379' is used instead of the local None (--trust-config)"]
    assert adopt({"train": {"executor": "local"}}, []) == ({"train": {"executor": "local"}}, [])


def test_a_key_the_user_overrides_is_left_to_the_override():
    assert adopt({"ray": {"address": "far:1"}}, ["ray.address=near:2"]) == ({"ray": {"address": "far:1"}}, [])


def test_the_llm_endpoint_is_inert_and_kept_under_cache_replay():
    data, notes = adopt({"llm": {"base_url": "http://far", "cache": "replay"}}, [])
    assert data["llm"]["base_url"] == "http://far"
    assert notes == ["llm.base_url: the received 'http://far' is kept, inert under llm.cache=replay"]
    data, _ = adopt({"llm": {"base_url": "http://far"}}, ["llm.cache=replay"])
    assert data["llm"]["base_url"] == "http://far"
    data, _ = adopt({"llm": {"base_url": "http://far", "cache": "replay"}}, ["llm.cache=readwrite"])
    assert data["llm"]["base_url"] is None


def test_a_stricter_received_limit_is_kept_and_a_looser_one_stops_naming_it():
    data, notes = adopt({"verify": {"call_timeout_s": 1.0}}, [])
    assert data == {"verify": {"call_timeout_s": 1.0}}
    assert notes == ["verify.call_timeout_s: the received 1.0 is kept (stricter than the local 5.0)"]
    with pytest.raises(ConfigError) as err:
        adopt({"verify": {"call_timeout_s": 60.0, "memory_mb": 9999}}, [])
    assert str(err.value) == ("the received config loosens bird's limits: verify.call_timeout_s=60.0 (local 5.0), "
                              "verify.memory_mb=9999 (local 2048). Limits come from this machine: give a value "
                              "yourself (e.g. verify.call_timeout_s=60.0) or pass --trust-config to accept the "
                              "received ones")
    assert adopt({"verify": {"call_timeout_s": 60.0}}, [], trust=True)[0] == {"verify": {"call_timeout_s": 60.0}}


def test_a_limit_of_zero_that_means_none_is_the_loosest():
    with pytest.raises(ConfigError, match=r"train.jax.trainer_memory_mb=0 \(local 16384\)"):
        adopt({"train": {"jax": {"trainer_memory_mb": 0}}}, [])
    _, notes = adopt({"train": {"timeout_s": 60.0}}, [])  # local 0 = none: any received limit is stricter
    assert notes == ["train.timeout_s: the received 60.0 is kept (stricter than the local 0.0)"]
    _, notes = adopt({"train": {"jax": {"trainer_memory_mb": 100}}}, [])
    assert "is kept (stricter" in notes[0]


def test_received_plugins_are_refused_unless_the_user_names_them():
    with pytest.raises(ConfigError) as err:
        adopt({"plugins": ["evil_mod"]}, [])
    assert str(err.value).startswith("the received config imports code: plugins=['evil_mod']. bird imports only the "
                                     "modules you name: give them yourself (e.g. plugins=['evil_mod']; bundle replay: "
                                     "--plugin MODULE) or pass --trust-config")
    assert adopt({"plugins": ["evil_mod"]}, ["plugins=[evil_mod]"])[0] == {"plugins": ["evil_mod"]}


def test_every_refusal_is_given_at_once():
    with pytest.raises(ConfigError) as err:
        adopt({"plugins": ["p"], "verify": {"memory_mb": 99999},
               "env": {"id": "gym/x", "task": {"make": "os:system"}}}, [])
    lines = str(err.value).split("\n")
    assert [line.split(":")[0] for line in lines] == ["the received task names code or files bird would import, call "
                                                      "or read", "the received config imports code",
                                                      "the received config loosens bird's limits"]


def test_a_received_task_naming_code_accepted_under_trust_is_noted():
    _, notes = adopt({"env": {"id": "gym/x", "task": {"make": "os:system"}}}, [], trust=True)
    assert notes == ["env.task names code or files (env.task.make='os:system'): taken as received (--trust-config)"]


def test_a_received_config_the_schema_rejects_is_a_config_error():
    with pytest.raises(ConfigError, match="^received config: "):
        adopt({"verify": {"memory_mb": "lots"}}, [])
    with pytest.raises(ConfigError, match="^received config: "):
        adopt({"no_such_section": 1}, [])


def test_an_authority_key_of_an_unknown_kind_is_refused_naming_the_kinds(monkeypatch):
    with pytest.raises(ValueError, match=r"authority kind 'secret'; allowed: \['endpoint', 'path', 'limit', 'code'\]"):
        add_authority_key("my.key", "secret")
    monkeypatch.setattr(received, "AUTHORITY", list(AUTHORITY))
    add_authority_key("llm.model", "endpoint", inert=("llm.cache", "off"))
    assert received.AUTHORITY[-1] == received.AuthorityKey("llm.model", "endpoint", None, ("llm.cache", "off"))
    assert adopt({"llm": {"model": "far-model"}}, []) == ({"llm": {"model": "bird-offline-synth-v1"}}, [
        "llm.model: the received 'far-model' is ignored; the local 'bird-offline-synth-v1' is used (--trust-config "
        "takes the received value)"])
    assert adopt({"llm": {"model": "far-model", "cache": "off"}}, [])[1] == [
        "llm.model: the received 'far-model' is kept, inert under llm.cache=off"]


def test_load_received_reads_a_mapping_without_interpolations(tmp_path):
    (tmp_path / "config.yaml").write_text("llm:\n  model: m\nseed: 3\n")
    assert load_received(tmp_path / "config.yaml") == {"llm": {"model": "m"}, "seed": 3}
    (tmp_path / "list.yaml").write_text("- 1\n")
    with pytest.raises(ConfigError, match=r"list.yaml: not a config \(a YAML mapping\)"):
        load_received(tmp_path / "list.yaml")
    keys = "\n".join(f"k{i}: ${{oc.env:HOME}}" for i in range(7))
    (tmp_path / "interp.yaml").write_text(keys + "\nplain: x\n")
    with pytest.raises(ConfigError) as err:
        load_received(tmp_path / "interp.yaml")
    assert f"{tmp_path / 'interp.yaml'}: k0, k1, k2, k3, k4 hold an interpolation" in str(err.value)
    assert "k5" not in str(err.value) and "bird resolves nothing in it" in str(err.value)
    with pytest.raises(ConfigError, match=r"missing.yaml: not a readable YAML config \(FileNotFoundError: "):
        load_received(tmp_path / "missing.yaml")
    (tmp_path / "alias.yaml").write_text("a: &x 1\nb: *x\n")
    with pytest.raises(ConfigError, match=r"not a readable YAML config \(BoundedParseError: a YAML alias"):
        load_received(tmp_path / "alias.yaml")


def test_the_users_own_task_file_on_a_search_path_they_added_vouches_for_the_same_task_section(tmp_path):
    own = tmp_path / "env" / "gym" / "mine.yaml"
    own.parent.mkdir(parents=True)
    # the same section as the received one once typed: defaults written out, an interpolation resolved
    own.write_text("task:\n  make: my_mod:Env\n  reference_reward: env\n  kwargs:\n    a: 2\n    b: ${.a}\n")
    env = {"id": "gym/mine", "task": {"make": "my_mod:Env", "kwargs": {"a": 2, "b": 2}}}
    notes, refusal = received_task(env, [f"hydra.searchpath=[file://{tmp_path}]"])
    assert refusal is None and notes == [
        f"env.task names code or files (env.task.make='my_mod:Env'): the task section of your own {own}, accepted"]
    other = {**env, "task": {**env["task"], "kwargs": {"a": 2, "b": 3}}}
    _, refusal = received_task(other, [f"hydra.searchpath=[file://{tmp_path}]"])
    assert refusal is not None
    # the command line's task keys apply before the comparison
    notes, refusal = received_task(other, [f"hydra.searchpath=[file://{tmp_path}]", "env.task.kwargs.b=2"])
    assert refusal is None and notes[0].endswith(f"the task section of your own {own}, accepted")


def test_a_key_below_a_list_the_user_gave_is_theirs():
    from bird.config.received_task import _given

    assert _given("env.task.wrappers[0].target", {"env.task.wrappers"})
    assert _given("env.task.wrappers.x", {"env.task.wrappers"})
    assert not _given("env.task.wrappersX[0]", {"env.task.wrappers"})


def test_a_limit_is_looser_only_when_strictly_larger_none_and_the_unlimited_value_being_the_largest():
    assert not received._looser(5.0, 5.0, None) and received._looser(6.0, 5.0, None)
    assert not received._looser(None, 0, 0) and not received._looser(0, None, 0)  # both unlimited
    assert received._looser(0, 10, 0) and not received._looser(10, 0, 0)


def test_a_declared_key_keeps_its_unlimited_value_and_a_code_key_of_any_type_is_refused_naming_it(monkeypatch):
    monkeypatch.setattr(received, "AUTHORITY", list(AUTHORITY))
    add_authority_key("train.timeout_s", "limit", unlimited=0)
    assert received.AUTHORITY[-1] == received.AuthorityKey("train.timeout_s", "limit", 0, None)
    add_authority_key("llm.model", "code")
    with pytest.raises(ConfigError, match=r"imports code: llm.model='far_module'\. "):
        adopt({"llm": {"model": "far_module"}}, [])


def test_the_keys_an_override_sets_are_read_without_its_prefix_or_value():
    from bird.config.overrides import override_keys

    assert override_keys(["++a.b=1", "+c=2", "~d", "e=x=y", " f =3"]) == {"a.b", "c", "d", "e", "f"}


def test_an_override_whose_value_holds_an_equals_sign_is_still_the_users_key():
    data, notes = adopt({"llm": {"base_url": "http://far"}}, ["llm.base_url=http://near?x=1"])
    assert data == {"llm": {"base_url": "http://far"}} and notes == []  # the override, merged later, decides
    env = {"task": {"make": "Hopper-v5", "kwargs": {"path": "/etc/x"}}}
    assert received_task(env, ["env.task.kwargs.path=/tmp/a=b"]) == ([], None)


def test_the_local_value_of_a_key_comes_from_an_override_of_its_section():
    assert adopt({"ray": {"address": "far"}}, ["ray={address: near}"]) == ({"ray": {"address": "near"}}, [
        "ray.address: the received 'far' is ignored; the local 'near' is used (--trust-config takes the received "
        "value)"])


def test_a_received_config_is_kept_as_data_its_interpolations_unresolved():
    assert adopt({"llm": {"model": "${oc.env:HOME}"}}, [])[0] == {"llm": {"model": "${oc.env:HOME}"}}


def test_the_keys_after_one_the_user_overrides_are_still_checked():
    with pytest.raises(ConfigError, match="loosens bird's limits: verify.memory_mb=9999"):
        adopt({"llm": {"base_url": "http://far"}, "verify": {"memory_mb": 9999}}, ["llm.base_url=http://near"])


def test_a_target_names_its_module_before_the_first_colon_and_an_expert_in_a_plugin_is_the_users():
    task = {"make": "Hopper-v5", "wrappers": [{"target": "plug:Wrap:extra"}], "expert": "plug:expert"}
    assert named_code(task, ["plug"]) == []
    assert named_code(task, []) == [("env.task.wrappers[0].target", "plug:Wrap:extra"), ("env.task.expert", "plug:expert")]


def test_the_task_refusal_says_every_way_to_vouch_in_full():
    _, refusal = received_task({"id": "gym/x", "task": {"make": "os:system"}})
    assert refusal == ("the received task names code or files bird would import, call or read: "
                       "env.task.make='os:system'. A received task may name a registered Gymnasium id and data "
                       "(docs/task_files.md); to run this one, put its task file (id 'gym/x', the same task section) "
                       "on your config search path (BIRD_CONFIG_PATH), name its module as a plugin, or pass "
                       "--trust-config")


def test_a_task_section_omegaconf_cannot_hold_is_a_config_error_naming_it():
    with pytest.raises(ConfigError, match="^env.task: Value 'set' is not a supported primitive type"):
        received_task({"task": {"make": {1, 2}}})


def test_every_received_code_key_is_named(monkeypatch):
    monkeypatch.setattr(received, "AUTHORITY", list(AUTHORITY))
    add_authority_key("llm.model", "code")
    with pytest.raises(ConfigError, match=r"^the received config imports code: plugins=\['p'\], llm.model='m'\. "):
        adopt({"plugins": ["p"], "llm": {"model": "m"}}, [])


def test_load_received_refuses_interpolations_and_unreadable_yaml_with_the_parsers_message(tmp_path):
    from bird.files import load_yaml

    (tmp_path / "i.yaml").write_text("llm:\n  model: ${oc.env:HOME}\n")
    with pytest.raises(ConfigError) as err:
        load_received(tmp_path / "i.yaml")
    assert str(err.value) == (f"{tmp_path / 'i.yaml'}: llm.model hold an interpolation (${{...}}); a received config "
                              "is data and bird resolves nothing in it")
    text = "a: [" + "b, " * 100 + ": : x"
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(ValueError) as parsed:
        load_yaml(text)
    assert len(str(parsed.value)) > 200
    with pytest.raises(ConfigError) as err:
        load_received(tmp_path / "bad.yaml")
    assert str(err.value) == (f"{tmp_path / 'bad.yaml'}: not a readable YAML config (ValueError: "
                              f"{str(parsed.value)[:200]})")
