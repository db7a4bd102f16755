"""Typed configuration: schema, ConfigStore registration, loading and validation.

The names below load on first use: importing a submodule (`bird.config.schema`, as every isolated trainer does) does
not import Hydra."""

from __future__ import annotations

from typing import Any

__all__ = ["BirdConfig", "ConfigError", "load_config", "register_configs"]


def __getattr__(name: str) -> Any:
    if name == "BirdConfig":
        from bird.config.schema import BirdConfig

        return BirdConfig
    if name in ("ConfigError", "load_config", "register_configs"):
        from bird.config import load

        return getattr(load, name)
    raise AttributeError(f"module 'bird.config' has no attribute {name!r}")
