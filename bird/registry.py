"""Component registry: (family, name) -> implementation. Config values that name an implementation are keys here."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["register", "get", "names", "families", "load_builtin_components"]

T = TypeVar("T")
_REGISTRY: dict[str, dict[str, Any]] = {}

# Modules whose import registers the built-in components. Kept light: heavy libraries are imported lazily inside.
_BUILTIN_MODULES = (
    "bird.prompts",
    "bird.stages.generate",
    "bird.stages.verify",
    "bird.stages.train",
    "bird.stages.feedback",
    "bird.stages.select",
    "bird.llm.offline",
    "bird.llm.backends",
    "bird.envs.registry",
    "bird.envs.metaworld.representations",
    "bird.learners",
    "bird.reward.contracts",
    "bird.components",
    "bird.reward.shaping",
    "bird.executors",
    "bird.tracking",
)


def register(family: str, name: str) -> Callable[[T], T]:
    """Decorator: register `obj` under (family, name). A duplicate name in one family is an error."""

    def deco(obj: T) -> T:
        members = _REGISTRY.setdefault(family, {})
        if name in members and members[name] is not obj:
            raise ValueError(f"registry: {family}/{name} is already registered")
        members[name] = obj
        return obj

    return deco


def get(family: str, name: str) -> Any:
    """Return the component registered as (family, name), or raise a ValueError listing the allowed names."""
    load_builtin_components()
    members = _REGISTRY.get(family, {})
    if name not in members:
        raise ValueError(f"unknown {family} {name!r}; registered: {sorted(members)}")
    return members[name]


def names(family: str) -> list[str]:
    """Sorted names registered in `family`."""
    load_builtin_components()
    return sorted(_REGISTRY.get(family, {}))


def families() -> list[str]:
    load_builtin_components()
    return sorted(_REGISTRY)


_loaded = False


def load_builtin_components() -> None:
    """Import every module that registers built-in components (idempotent)."""
    global _loaded
    if _loaded:
        return
    for mod in _BUILTIN_MODULES:
        importlib.import_module(mod)
    _loaded = True
