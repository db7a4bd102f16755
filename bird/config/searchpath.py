"""Where config files are found: bird's conf/, then each folder of `BIRD_CONFIG_PATH`, then `hydra.searchpath`
entries (docs/extending.md). A user's `method/`, `env/`, `choice/` and `sweep/` files are options like bird's own;
where a name is in several folders, the first folder wins (bird's own files come first)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

from bird.config.errors import ConfigError

__all__ = ["CONF_DIR", "ENV_VAR", "user_dirs", "config_dirs", "options", "find", "register_search_path"]

ENV_VAR = "BIRD_CONFIG_PATH"


def _conf_dir() -> Path:
    """conf/ of an installed wheel (package data under bird/conf), else the source checkout's conf/."""
    package = Path(__file__).resolve().parents[1]
    return package / "conf" if (package / "conf" / "config.yaml").is_file() else package.parent / "conf"


CONF_DIR = _conf_dir()


def user_dirs(strict: bool = True) -> list[Path]:
    """The folders `BIRD_CONFIG_PATH` lists (`:`-separated, empty entries skipped), absolute. With `strict`, an entry
    that is not a folder is a ConfigError naming it; otherwise it is left out."""
    out: list[Path] = []
    for entry in os.environ.get(ENV_VAR, "").split(os.pathsep):
        if not entry:
            continue
        path = Path(entry).expanduser().absolute()
        if path.is_dir():
            out.append(path)
        elif strict:
            raise ConfigError(f"{ENV_VAR}: {entry!r} is not a folder (expected folders holding method/, env/, "
                              "choice/ or sweep/ files, separated by ':')")
    return list(dict.fromkeys(out))


class BirdConfigPath(SearchPathPlugin):
    """Hydra search-path plugin: appends the `BIRD_CONFIG_PATH` folders to the search path of bird's config."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        mains = [e.path for e in search_path.get_path() if e.provider == "main"]
        if not any(Path(p.removeprefix("file://")).absolute() == CONF_DIR for p in mains):
            return  # another Hydra application in this process
        for folder in user_dirs(strict=False):
            search_path.append(provider=ENV_VAR, path=f"file://{folder}")


_registered = False


def register_search_path() -> None:
    """Register BirdConfigPath with Hydra (once per process)."""
    global _registered
    if not _registered:
        from hydra.core.plugins import Plugins

        Plugins.instance().register(BirdConfigPath)
        _registered = True


def _override_dirs(overrides: Sequence[str]) -> list[Path]:
    """Folders a `hydra.searchpath=[...]` override names (file:// entries and plain paths; pkg:// ones too)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    wanted = [o for o in overrides if o.split("=", 1)[0].lstrip("+~") == "hydra.searchpath"]
    out = []
    for override in OverridesParser.create().parse_overrides(wanted):
        for entry in override.value() or []:
            entry = str(entry)
            if entry.startswith("pkg://"):
                from importlib import resources

                pkg, _, sub = entry.removeprefix("pkg://").partition("/")
                out.append(Path(str(resources.files(pkg))) / sub)
            else:
                out.append(Path(entry.removeprefix("file://")).absolute())
    return out


def config_dirs(overrides: Sequence[str] = ()) -> list[Path]:
    """Every config folder, in Hydra's search order: conf/, `BIRD_CONFIG_PATH`, then `hydra.searchpath` overrides."""
    return list(dict.fromkeys([CONF_DIR, *user_dirs(), *_override_dirs(overrides)]))


def options(group: str, overrides: Sequence[str] = ()) -> list[str]:
    """Option names of `group` (e.g. "method") over the whole search path, subfolders too ("hillclimb/v1")."""
    names = set()
    for folder in config_dirs(overrides):
        base = folder / group
        names.update(p.relative_to(base).with_suffix("").as_posix() for p in base.rglob("*.yaml"))
    return sorted(names)


def find(group: str, name: str, overrides: Sequence[str] = ()) -> Path | None:
    """The file Hydra composes for option `name` of `group` (the first folder that has it), or None; None for a name
    that would leave the folder (absolute, or with a `..` part: a received run's env id is one such name)."""
    if Path(name).is_absolute() or ".." in Path(name).parts:
        return None
    for folder in config_dirs(overrides):
        path = folder / group / f"{name}.yaml"
        if path.is_file():
            return path
    return None
