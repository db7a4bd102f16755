"""Plugins: modules from outside bird whose import registers components (docs/extending.md).

Two sources, imported after bird's own modules: the `bird.plugins` entry points of installed packages, and the modules
a config names in `plugins`. `load` is the one way bird imports them: `bird.config.load.load_config` (every command
that loads a config) and each training worker, from its job, call it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import re
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from bird.registry import load_builtin_components

__all__ = ["ENTRY_POINT_GROUP", "PluginError", "load", "entry_point_modules", "describe"]

ENTRY_POINT_GROUP = "bird.plugins"
_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_HINT = ("a plugin is a module on the Python path: run bird from the folder that holds it, add that folder to "
         "PYTHONPATH, or install its package")


class PluginError(ValueError):
    """A plugin that cannot be imported (the message names it)."""


def entry_point_modules() -> list[tuple[str, str]]:
    """(module, distribution) of every installed `bird.plugins` entry point, in name order."""
    points = sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
    return [(ep.module, ep.dist.name if ep.dist is not None else "?") for ep in points]


def _import(name: str, where: str) -> None:
    if not _NAME.fullmatch(name):
        raise PluginError(f"{where}: {name!r} is not a module name (e.g. my_plugin or my_package.rules); {_HINT}")
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (name == exc.name or name.startswith(exc.name + ".")):
            raise PluginError(f"{where}: no module {name!r} on the Python path; {_HINT}") from None
        raise PluginError(f"{where}: importing {name!r} failed: {type(exc).__name__}: {exc}") from exc
    except Exception as exc:  # noqa: BLE001 - any error in a plugin's own code is that plugin's
        raise PluginError(f"{where}: importing {name!r} failed: {type(exc).__name__}: {exc}") from exc


_entry_points_loaded = False


def load(modules: Sequence[str] = ()) -> None:
    """Import bird's own components, then every `bird.plugins` entry point, then `modules` (a config's `plugins`),
    each once. Raises PluginError naming the first plugin that cannot be imported."""
    global _entry_points_loaded
    load_builtin_components()
    if not _entry_points_loaded:
        for module, dist in entry_point_modules():
            _import(module, f"entry point {ENTRY_POINT_GROUP} of {dist}")
        _entry_points_loaded = True
    for name in modules:
        _import(name, "plugins")


def _sha256(module: Any) -> str | None:
    """sha256 of a module's file (what `sha256sum my_plugin.py` prints); of a package, of its .py files (each
    relative path and content, in path order)."""
    file = getattr(module, "__file__", None)
    if not file:
        return None
    path = Path(file)
    if path.name != "__init__.py":
        return hashlib.sha256(path.read_bytes()).hexdigest()
    digest = hashlib.sha256()
    for f in sorted(path.parent.rglob("*.py")):
        digest.update(f.relative_to(path.parent).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def _distribution(module: str) -> str | None:
    """The installed distribution that provides `module` (None for a module that is only a file on the path)."""
    dists = metadata.packages_distributions().get(module.split(".")[0]) or []
    return dists[0] if dists else None


def describe(modules: Sequence[str] = ()) -> list[dict[str, Any]]:
    """What result.json and environment.json record of the plugins a run imports (entry points, then `modules`):
    each module, where it came from, its distribution's version (an installed package) and its files' sha256."""
    load(modules)
    found = [(m, "entry point", dist) for m, dist in entry_point_modules()]
    found += [(m, "config", _distribution(m)) for m in modules]
    out = []
    for name, source, dist in found:
        version = None
        if dist is not None:
            try:
                version = metadata.version(dist)
            except metadata.PackageNotFoundError:
                dist = None
        out.append({"module": name, "source": source, "distribution": dist, "version": version,
                     "sha256": _sha256(sys.modules[name])})
    return out
