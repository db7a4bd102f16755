"""Command-line overrides applied outside Hydra (bird.resume, bundle replay), with Hydra's prefixes as Hydra defines
them (https://hydra.cc/docs/advanced/override_grammar/basic/, "Modifying the Config Object"): `key=value` sets a key
the config has, `+key=value` adds a key it lacks, `++key=value` sets or adds, `~key` (`~key=value`: only while it
holds that value) deletes. A value is read as OmegaConf.from_dotlist reads it (YAML, interpolations unresolved)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

from bird.config.errors import ConfigError

__all__ = ["Override", "parse_override", "override_keys", "override_data", "apply_overrides"]

PREFIXES = ("++", "+", "~")  # the longest first


@dataclass(frozen=True)
class Override:
    """One override: its text, Hydra prefix ('' when none), key and the value text (None: no `=`)."""

    text: str
    prefix: str
    key: str
    value: str | None

    @property
    def line(self) -> str:
        """The override without its prefix: what OmegaConf.from_dotlist reads."""
        return self.key if self.value is None else f"{self.key}={self.value}"

    def dotlist(self) -> DictConfig:
        """The override as a config to merge."""
        try:
            return OmegaConf.from_dotlist([self.line])
        except (OmegaConfBaseException, ValueError) as exc:
            raise ConfigError(f"override {self.text!r}: {exc}") from None

    def parsed(self) -> Any:
        """The value as OmegaConf.from_dotlist reads it."""
        try:
            return OmegaConf.to_container(OmegaConf.from_dotlist([f"v={self.value}"]), resolve=False)["v"]
        except (OmegaConfBaseException, ValueError) as exc:
            raise ConfigError(f"override {self.text!r}: {exc}") from None


def parse_override(text: str) -> Override:
    """`text` split into prefix, key and value text."""
    head, eq, value = text.partition("=")
    prefix = next((p for p in PREFIXES if head.startswith(p)), "")
    return Override(text, prefix, head[len(prefix):].strip(), value if eq else None)


def override_keys(overrides: Sequence[str]) -> set[str]:
    """The keys the overrides set, add or delete."""
    return {parse_override(o).key for o in overrides}


def override_data(overrides: Sequence[str]) -> dict[str, Any]:
    """The values the overrides set or add, as nested data (a deletion gives none)."""
    kept = [o for o in map(parse_override, overrides) if o.prefix != "~"]
    try:
        data = OmegaConf.to_container(OmegaConf.from_dotlist([o.line for o in kept]), resolve=False)
    except (OmegaConfBaseException, ValueError) as exc:
        raise ConfigError(f"overrides: {exc}") from None
    assert isinstance(data, dict)
    return data  # type: ignore[return-value]


def _current(cfg: DictConfig, key: str) -> Any:
    return OmegaConf.select(cfg, key, default=None, throw_on_resolution_failure=False)


def apply_overrides(cfg: DictConfig, overrides: Sequence[str]) -> None:
    """Apply `overrides` to `cfg` in order, each as Hydra would; ConfigError naming the override otherwise."""
    for o in map(parse_override, overrides):
        try:
            _apply(cfg, o)
        except OmegaConfBaseException as exc:  # a value the schema refuses, a key it lacks, a field deleted
            raise ConfigError(f"override {o.text!r}: {exc}") from None


def _apply(cfg: DictConfig, o: Override) -> None:
    if o.prefix == "~":
        _delete(cfg, o)
    elif o.prefix == "+" and _current(cfg, o.key) is not None and not isinstance(o.parsed(), dict | list):
        raise ConfigError(f"override {o.text!r}: {o.key} is already in the config; drop the + to set it "
                          f"({o.line}), or write +{o.text} to set or add it")
    elif o.prefix:  # + of a key the config lacks, ++
        with open_dict(cfg):
            cfg.merge_with(o.dotlist())
    else:
        try:
            cfg.merge_with(o.dotlist())
        except (ConfigAttributeError, ConfigKeyError):
            raise ConfigError(f"override {o.text!r}: {o.key} is not in the config (+{o.text} adds a key to a "
                              "section that takes new ones)") from None


def _delete(cfg: DictConfig, o: Override) -> None:
    current = _current(cfg, o.key)
    if current is None:
        raise ConfigError(f"override {o.text!r}: {o.key} is not in the config; nothing to delete")
    if o.value is not None and o.parsed() != current:
        raise ConfigError(f"override {o.text!r}: {o.key} does not hold {o.value}; delete it with ~{o.key}")
    parent, _, last = o.key.rpartition(".")
    node = OmegaConf.select(cfg, parent) if parent else cfg
    del node[last]  # a key of bird's schema cannot be deleted (OmegaConf refuses it), one of a mapping can
