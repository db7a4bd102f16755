"""Register the schema with Hydra, turn a composed DictConfig into a validated BirdConfig (its plugins imported),
compose by name."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import yaml
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from bird.config.errors import ConfigError
from bird.config.schema import BirdConfig
from bird.config.searchpath import CONF_DIR, find, register_search_path, user_dirs
from bird.config.validate import validate

__all__ = ["ConfigError", "register_configs", "load_config", "compose", "composed_choices", "config_hash", "CONF_DIR"]


def _if_matched(matched: Any, own: Any, *, _root_: Any) -> Any:
    """${if_matched:a,b}: a under budget.protocol=matched (BIRD's matched runs), else b (the method's own value)."""
    return matched if _root_.budget.protocol == "matched" else own


def register_configs() -> None:
    """Store the schema as `bird_schema` (conf/config.yaml lists it first in its defaults); register resolvers and
    the BIRD_CONFIG_PATH search path."""
    if "bird_schema.yaml" not in ConfigStore.instance().repo:  # once per process: storing it costs 0.1 s
        ConfigStore.instance().store(name="bird_schema", node=BirdConfig)
    if not OmegaConf.has_resolver("if_matched"):
        OmegaConf.register_new_resolver("if_matched", _if_matched)
    register_search_path()


def load_config(cfg: DictConfig) -> BirdConfig:
    """Convert to the typed object, import its plugins and validate; raise ConfigError listing every problem."""
    from bird import plugins
    from bird.config.secrets import secret_problems

    if secrets := secret_problems(cfg):
        raise ConfigError("invalid config:\n" + "\n".join(f"  - {p}" for p in secrets))
    if unknown := unknown_keys(cfg):
        raise ConfigError("invalid config:\n" + "\n".join(
            f"  - unknown key {k!r}: bird's schema has no such key (a misspelling? `python -m bird --cfg job` "
            "prints every key)" for k in unknown))
    try:
        obj = OmegaConf.to_object(cfg)
    except OmegaConfBaseException as exc:
        raise ConfigError(f"invalid config: {exc}") from None
    assert isinstance(obj, BirdConfig)
    try:
        plugins.load(obj.plugins)
    except plugins.PluginError as exc:
        raise ConfigError(f"invalid config:\n  - {exc}") from None
    _derive(obj)
    problems = validate(obj)
    if problems:
        raise ConfigError("invalid config:\n" + "\n".join(f"  - {p}" for p in problems))
    return obj


def unknown_keys(cfg: DictConfig) -> list[str]:
    """Dotted keys the schema does not define, under any typed section (a `+key=value` adds a key Hydra's struct
    mode would refuse, and the typed config would carry it without reading it). Untyped mappings (kwargs, tasks) take
    any key."""
    found: list[str] = []

    def walk(node: Any, prefix: str) -> None:
        if not isinstance(node, DictConfig) or node._is_missing() or node._is_none():
            return
        kind = OmegaConf.get_type(node)
        known = {f.name for f in dataclasses.fields(kind)} if dataclasses.is_dataclass(kind) else None
        for key in node:
            path = f"{prefix}{key}"
            if known is not None and key not in known:
                found.append(path)
            else:
                walk(node._get_node(key), f"{path}.")

    walk(cfg, "")
    return found


def _derive(cfg: BirdConfig) -> None:
    """Values derived from other keys, filled in once: reward.language from the learners (jax if one needs it)."""
    from bird import registry

    if cfg.reward.language is None:
        learners = {cfg.train.learner, cfg.final.learner or cfg.train.learner} & set(registry.names("learner"))
        jax = any(registry.get("learner", name).language == "jax" for name in learners)
        cfg.reward.language = "jax" if jax else "numpy"


def compose(overrides: list[str] | None = None) -> BirdConfig:
    """Compose conf/config.yaml with overrides (as the CLI would) and return the validated config, its `choices`
    filled in (composed_choices)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    register_configs()
    user_dirs()  # a BIRD_CONFIG_PATH entry that is not a folder: a ConfigError naming it
    overrides = list(overrides or [])
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = hydra_compose(config_name="config", overrides=overrides)
    out = load_config(cfg)
    out.choices = list(dict.fromkeys([*out.choices, *composed_choices(overrides)]))
    return out


def composed_choices(overrides: list[str]) -> list[str]:
    """The design choices (group `choice`) a composition with `overrides` includes, in Hydra's order: those the
    method's file and the methods it extends list in their defaults (`- /choice/<name>`), then a `+choice=<name>`
    flip. Files are found as Hydra finds them (bird.config.searchpath)."""
    picked = {o.split("=", 1)[0].lstrip("+"): o.split("=", 1)[1] for o in overrides if "=" in o}
    out = _method_choices(picked.get("method") or _default_option("method"), overrides)
    if picked.get("choice"):
        out.append(picked["choice"])
    return list(dict.fromkeys(out))


def _default_option(group: str) -> str:
    """The option conf/config.yaml's defaults list picks for `group`."""
    for entry in (yaml.safe_load((CONF_DIR / "config.yaml").read_text()) or {}).get("defaults", []):
        if isinstance(entry, dict) and group in entry:
            return str(entry[group])
    raise KeyError(group)


def _method_choices(method: str, overrides: list[str], seen: tuple[str, ...] = ()) -> list[str]:
    path = find("method", method, overrides)
    if path is None or method in seen:
        return []
    out: list[str] = []
    for entry in (yaml.safe_load(path.read_text()) or {}).get("defaults", []):
        if isinstance(entry, str) and entry.startswith("/method/"):
            out += _method_choices(entry.removeprefix("/method/"), overrides, (*seen, method))
        elif isinstance(entry, str) and entry.startswith("/choice/"):
            out.append(entry.removeprefix("/choice/"))
    return out


# Execution-only keys: they change how a run is carried out, never what it computes.
_EXECUTION_KEYS = {"llm": ("cache", "cache_dir", "max_concurrency", "timeout_s", "max_retries", "retry_base_s",
                           "retry_max_s", "sweep_max_concurrency", "prompt_cache", "mode", "batch_poll_s"),
                   "budget": ("sweep_max_llm_calls", "sweep_max_cost_usd"), "train": ("workers", "start_method", "executor", "resources"),
                   "run": ("progress", "save_policies", "resume"),
                   "ray": ("address", "num_cpus", "object_store_mb", "include_dashboard")}
_EXECUTION_SECTIONS = ("video", "tracker")  # what is filmed and where it is logged never changes a result


_HASHES: dict[str, str] = {}  # repr of a config (every value, types included) -> its hash


def config_hash(cfg: BirdConfig) -> str:
    """Short content hash of the resolved config, execution-only keys left out (recorded in result.json)."""
    text = repr(cfg)
    if text not in _HASHES:
        if len(_HASHES) > 64:
            _HASHES.clear()
        _HASHES[text] = _content_hash(cfg)
    return _HASHES[text]


def _content_hash(cfg: BirdConfig) -> str:
    data: Any = OmegaConf.to_container(OmegaConf.structured(cfg), resolve=True)
    if not data.get("plugins"):
        data.pop("plugins", None)  # the hash of a config without plugins is what it was before the key existed
    if data.get("env", {}).get("task", 0) is None:
        data["env"].pop("task")  # likewise a task without a task file (env.task: the gym suite's)
    if not data.get("transfer", {}).get("tasks"):
        data.pop("transfer", None)  # and a run without a transfer evaluation (transfer.tasks)
    for section, keys in _EXECUTION_KEYS.items():
        for key in keys:
            data.get(section, {}).pop(key, None)
        if data.get(section) == {}:
            del data[section]
    for section in _EXECUTION_SECTIONS:
        data.pop(section, None)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]
