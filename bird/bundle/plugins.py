"""The plugins a bundle's cells import, checked before replay does any work: a bundle only names modules, so replay
imports those the user names with `--plugin` (and installed entry points), and says which are missing here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bird.bundle.archive import BundleError
from bird.bundle.reader import Bundle
from bird.files import load_yaml
from bird.plugins import ENTRY_POINT_GROUP, PluginError, entry_point_modules
from bird.plugins import load as load_plugins

__all__ = ["check_plugins", "config_plugins"]


def config_plugins(bundle: Bundle, cid: str) -> list[str]:
    """`plugins` of the cell's config.yaml as written (bounded YAML without aliases; no interpolation is resolved)."""
    try:
        data = load_yaml(bundle.read(f"runs/{cid}/config.yaml").decode("utf-8"))
    except ValueError as exc:  # BundleError too
        raise BundleError(f"{cid}: config.yaml cannot be read ({str(exc)[:200]})") from None
    value = (data.get("plugins") or []) if isinstance(data, dict) else []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BundleError(f"{cid}: config.yaml plugins={value!r} is not a list of module names")
    return value


def _label(record: dict[str, Any] | None) -> str:
    if not record:
        return ""
    what = f"version {record['version']}" if record.get("version") else f"sha256 {str(record.get('sha256'))[:12]}"
    return f" ({what} when recorded)"


def check_plugins(bundle: Bundle, cells: Sequence[str], trusted: Sequence[str]) -> None:
    """Raise BundleError, before any work, naming every plugin of `cells` that replay may not or cannot import here:
    a config's plugin not named in `trusted` (--plugin), one that is not importable, an entry point not installed."""
    installed = {module for module, _ in entry_point_modules()}
    problems = []
    for cid in cells:
        recorded = {str(p.get("module")): p for p in bundle.cell(cid).get("plugins") or [] if isinstance(p, dict)}
        for name in config_plugins(bundle, cid):
            if name not in trusted:
                problems.append(f"{cid} imports the plugin {name!r}{_label(recorded.get(name))}: replay imports a "
                                f"plugin only when you name it (--plugin {name})")
                continue
            try:
                load_plugins([name])
            except PluginError as exc:
                problems.append(f"{cid} needs the plugin {name!r}{_label(recorded.get(name))}: {exc}")
        for name, record in recorded.items():
            if record.get("source") == "entry point" and name not in installed:
                problems.append(f"{cid} ran with the plugin {name!r} of {record.get('distribution')}"
                                f"{_label(record)}, a {ENTRY_POINT_GROUP} entry point that is not installed here")
    if problems:
        raise BundleError("the bundle's runs need plugins; nothing was replayed:\n  " + "\n  ".join(problems))
