"""What a received task section may name (the `env.task` of a received config.yaml, or of a task file that is not on
the config search path): data is taken as received, code and files only from the user. docs/security.md, "Trust
boundary"; docs/task_files.md.

Data: `make` a registered Gymnasium id (or the class one names), a score, success or reference function or a wrapper
listed in DATA_TARGETS (a scripted expert, `expert`, is always code), a `source.file` module of bird or Gymnasium, and kwargs that name no path. Any other target
(bird would import and call it) or source file (bird would read it into a prompt) is refused before any work, naming
the keys, unless the user vouched for it: their own task file of the same id on the config search path has the same
task section, the module is a plugin they named (or installed), they gave the key on the command line, or `trust`
(--trust-config).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from bird.config.errors import ConfigError
from bird.config.overrides import override_data, override_keys
from bird.config.schema import TaskFileConfig
from bird.config.searchpath import config_dirs, find

__all__ = ["DATA_TARGETS", "SOURCE_PACKAGES", "LOADER_IDS", "named_code", "received_task", "check_received_task",
           "on_search_path"]

# `module:name` targets a received task may name: the score functions bird's own task files name
# (bird/envs/gym/metrics.py), and Gymnasium wrappers whose arguments are numbers (they only transform arrays)
DATA_TARGETS = frozenset({
    *(f"bird.envs.gym.metrics:{f}" for f in ("hop_minus_drift", "target_speed_error", "heading_speed", "dwell_fraction",
                                             "mountain_car_at_goal", "acrobot_tip_above_line")),
    *(f"gymnasium.wrappers:{w}" for w in ("ClipAction", "RescaleAction", "RescaleObservation", "FlattenObservation",
                                          "TimeAwareObservation", "NormalizeObservation")),
})
SOURCE_PACKAGES = ("bird", "gymnasium")  # packages whose modules' source a received source.file may show
_MODULE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_OPTION = re.compile(r"[A-Za-z0-9_]+(/[A-Za-z0-9_-]+)+")  # an env option name: gym/my_task
_PATH_LIKE = re.compile(r"[/\\]|^[~.]")  # a simulator opens it relative to the working folder or the root
# registered ids that build another env from a name in their kwargs (shimmy's old-Gym loaders import `module:Env`)
LOADER_IDS = frozenset({"GymV21Environment-v0", "GymV26Environment-v0"})


def _registered(make: str) -> bool:
    """`make` is a registered Gymnasium id, or the `module:Class` entry point of one (code this machine registered),
    other than a loader."""
    import gymnasium

    if make in LOADER_IDS:
        return False
    return make in gymnasium.registry or any(make == s.entry_point for s in gymnasium.registry.values())


def _within(module: str, packages: Sequence[str]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def _paths(node: Any, key: str) -> Iterator[tuple[str, Any]]:
    """(key, value) of every string in kwargs that reads as a path (a simulator would open that file)."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, f"{key}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, f"{key}[{i}]")
    elif isinstance(node, str) and _PATH_LIKE.search(node):
        yield key, node


def _at(task: dict[str, Any], section: str, key: str) -> Any:
    """task[section][key], None where either is missing or not a mapping (a malformed section is the schema's to name)."""
    node = task.get(section)
    return node.get(key) if isinstance(node, dict) else None


def named_code(task: dict[str, Any], plugins: Sequence[str] = ()) -> list[tuple[str, Any]]:
    """(key, value) of every entry of a task section that names code or a file beyond data (module docstring);
    targets inside the modules `plugins` are the user's. Any value that is not a string counts as code."""
    def code(target: Any) -> bool:
        return not (isinstance(target, str) and (target in DATA_TARGETS
                                                 or _within(target.partition(":")[0], plugins)))

    out: list[tuple[str, Any]] = []
    make = task.get("make")
    if isinstance(make, str) and (":" in make or make in LOADER_IDS) and not _registered(make) and code(make):
        out.append(("env.task.make", make))
    out += _paths(task.get("kwargs"), "env.task.kwargs")
    wrappers = task.get("wrappers")
    for i, w in enumerate(wrappers if isinstance(wrappers, list) else []):
        target = w.get("target") if isinstance(w, dict) else w
        if code(target):
            out.append((f"env.task.wrappers[{i}].target", target))
        out += _paths(w.get("kwargs") if isinstance(w, dict) else None, f"env.task.wrappers[{i}].kwargs")
    for section in ("score", "success"):
        target = _at(task, section, "function")
        if target is not None and code(target):
            out.append((f"env.task.{section}.function", target))
    expert = task.get("expert")  # a scripted expert's factory: bird would import and call it
    if expert is not None and code(expert):
        out.append(("env.task.expert", expert))
    reference = task.get("reference_reward", "env")
    if reference not in ("env", "none") and code(reference):
        out.append(("env.task.reference_reward", reference))
    file = _at(task, "source", "file")
    if file is not None and not (isinstance(file, str) and _MODULE.fullmatch(file)
                                 and _within(file, (*SOURCE_PACKAGES, *plugins))):
        out.append(("env.task.source.file", file))
    return out


def _typed(task: Any) -> Any:
    return OmegaConf.to_container(OmegaConf.merge(OmegaConf.structured(TaskFileConfig), task), resolve=True)


def _own_file(env_id: Any, task: dict[str, Any], overrides: Sequence[str]) -> Path | None:
    """The user's task file of option `env_id` on the config search path (bird's conf/ first), when its task section
    is the same as `task`; else None."""
    if not (isinstance(env_id, str) and _OPTION.fullmatch(env_id)):
        return None
    path = find("env", env_id, overrides)
    if path is None:
        return None
    try:
        return path if _typed(OmegaConf.load(path).get("task") or {}) == _typed(task) else None
    except (OmegaConfBaseException, ValueError, OSError):
        return None


def _given(key: str, mine: set[str]) -> bool:
    """The user set `key` (or a section above it) on the command line."""
    return any(key == m or key.startswith((m + ".", m + "[")) for m in mine)


def _command_line(overrides: Sequence[str]) -> tuple[dict[str, Any], list[str], set[str]]:
    """(env.task overrides as data, the plugins the user named, the keys the user set)."""
    given = override_data(overrides)
    env, plugins = given.get("env"), given.get("plugins")
    task = env.get("task") if isinstance(env, dict) else None
    return (task if isinstance(task, dict) else {}, [str(p) for p in plugins] if isinstance(plugins, list) else [],
            override_keys(overrides))


def received_task(env: Any, overrides: Sequence[str] = (), trust: bool = False) -> tuple[list[str], str | None]:
    """(notes, refusal) for the env section of a received config: the refusal names every key of its task section
    that names code or a file the user has not vouched for (None when there is none, or `trust`)."""
    if not isinstance(env, dict) or not isinstance(env.get("task"), dict):
        return [], None
    from bird.plugins import entry_point_modules

    extra, plugins, mine = _command_line(overrides)
    try:
        task = OmegaConf.to_container(OmegaConf.merge(OmegaConf.create(env["task"]), extra))
    except (OmegaConfBaseException, ValueError) as exc:
        raise ConfigError(f"env.task: {exc}") from None
    assert isinstance(task, dict)
    trusted = [*plugins, *(m for m, _ in entry_point_modules())]
    named = [(k, v) for k, v in named_code(task, trusted) if not _given(k, mine)]
    if not named:
        return [], None
    listing = ", ".join(f"{k}={v!r}" for k, v in named)
    own = _own_file(env.get("id"), task, overrides)
    if own is not None:
        return [f"env.task names code or files ({listing}): the task section of your own {own}, accepted"], None
    if trust:
        return [f"env.task names code or files ({listing}): taken as received (--trust-config)"], None
    return [], (f"the received task names code or files bird would import, call or read: {listing}. A received task "
                "may name a registered Gymnasium id and data (docs/task_files.md); to run this one, put its task file "
                f"(id {env.get('id')!r}, the same task section) on your config search path (BIRD_CONFIG_PATH), name "
                "its module as a plugin, or pass --trust-config")


def check_received_task(env: Any, overrides: Sequence[str] = (), trust: bool = False) -> list[str]:
    """`received_task`'s notes; raises ConfigError with its refusal."""
    notes, refusal = received_task(env, overrides, trust)
    if refusal is not None:
        raise ConfigError(refusal)
    return notes


def on_search_path(path: Path) -> bool:
    """`path` is an env option file on the config search path (under some config folder's env/): the user's own."""
    real = Path(path).resolve()
    return any(real.is_relative_to((folder / "env").resolve()) for folder in config_dirs())
