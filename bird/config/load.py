"""Register the schema with Hydra, turn a composed DictConfig into a validated BirdConfig, compose by name."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from bird.config.schema import BirdConfig
from bird.config.validate import validate

__all__ = ["ConfigError", "register_configs", "load_config", "compose", "config_hash", "CONF_DIR"]


def _conf_dir() -> Path:
    """conf/ of an installed wheel (package data under bird/conf), else the source checkout's conf/."""
    package = Path(__file__).resolve().parents[1]
    return package / "conf" if (package / "conf" / "config.yaml").is_file() else package.parent / "conf"


CONF_DIR = _conf_dir()


class ConfigError(ValueError):
    """A config problem the user can fix; the message names every bad key."""


def _if_matched(matched: Any, own: Any, *, _root_: Any) -> Any:
    """${if_matched:a,b}: a under budget.protocol=matched (BIRD's matched runs), else b (the method's own value)."""
    return matched if _root_.budget.protocol == "matched" else own


def register_configs() -> None:
    """Store the schema as `bird_schema` (conf/config.yaml lists it first in its defaults); register resolvers."""
    if "bird_schema.yaml" not in ConfigStore.instance().repo:  # once per process: storing it costs 0.1 s
        ConfigStore.instance().store(name="bird_schema", node=BirdConfig)
    if not OmegaConf.has_resolver("if_matched"):
        OmegaConf.register_new_resolver("if_matched", _if_matched)


def load_config(cfg: DictConfig) -> BirdConfig:
    """Convert to the typed object and validate; raise ConfigError listing every problem."""
    from bird.config.secrets import secret_problems

    if secrets := secret_problems(cfg):
        raise ConfigError("invalid config:\n" + "\n".join(f"  - {p}" for p in secrets))
    try:
        obj = OmegaConf.to_object(cfg)
    except OmegaConfBaseException as exc:
        raise ConfigError(f"invalid config: {exc}") from None
    assert isinstance(obj, BirdConfig)
    _derive(obj)
    problems = validate(obj)
    if problems:
        raise ConfigError("invalid config:\n" + "\n".join(f"  - {p}" for p in problems))
    return obj


def _derive(cfg: BirdConfig) -> None:
    """Values derived from other keys, filled in once: reward.language from the learners (jax if one needs it)."""
    from bird import registry

    if cfg.reward.language is None:
        learners = {cfg.train.learner, cfg.final.learner or cfg.train.learner} & set(registry.names("learner"))
        jax = any(registry.get("learner", name).language == "jax" for name in learners)
        cfg.reward.language = "jax" if jax else "numpy"


def compose(overrides: list[str] | None = None) -> BirdConfig:
    """Compose conf/config.yaml with overrides (as the CLI would) and return the validated config."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = hydra_compose(config_name="config", overrides=list(overrides or []))
    return load_config(cfg)


# Execution-only keys: they change how a run is carried out, never what it computes.
_EXECUTION_KEYS = {"llm": ("cache", "cache_dir", "max_concurrency", "timeout_s", "max_retries", "retry_base_s",
                           "retry_max_s", "sweep_max_concurrency"),
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
    for section, keys in _EXECUTION_KEYS.items():
        for key in keys:
            data.get(section, {}).pop(key, None)
        if data.get(section) == {}:
            del data[section]
    for section in _EXECUTION_SECTIONS:
        data.pop(section, None)
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:12]
