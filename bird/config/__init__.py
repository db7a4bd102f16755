"""Typed configuration: schema, ConfigStore registration, loading and validation."""

from bird.config.load import ConfigError, load_config, register_configs
from bird.config.schema import BirdConfig

__all__ = ["BirdConfig", "ConfigError", "load_config", "register_configs"]
