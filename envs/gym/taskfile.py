"""Task files: what a config needs of one before any work (`problems`, no env is built), and what the task offers
(views, frames, success flag, reference reward) for the config checks of bird/config/validate.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from bird.config.schema import EnvConfig, TaskFileConfig
from bird.envs.base import FIELD_KINDS
from bird.envs.gym.episode import REDUCTIONS, SCORE_KINDS

__all__ = ["problems", "has_reference", "representations", "read_env_file", "typed_env", "SOURCE_VIEWS", "BASE_VIEWS"]

BASE_VIEWS = ("obs_index", "class_abstraction")  # every task file serves these (built from its fields)
SOURCE_VIEWS = ("full_source", "obs_code")  # what source.show may add


def _target_ok(value: str) -> bool:
    module, sep, attr = value.partition(":")
    return bool(sep and module and attr)


def _field_problems(task: TaskFileConfig) -> list[str]:
    """Kinds, slices, and that the slices tile [0, end) with neither gap nor overlap."""
    out, spans = [], []
    for i, f in enumerate(task.fields):
        key = f"env.task.fields[{i}] ({f.name})"
        if f.kind not in FIELD_KINDS:
            out.append(f"{key}.kind={f.kind!r}: allowed: {list(FIELD_KINDS)}")
        if len(f.slice) != 2 or not 0 <= f.slice[0] < f.slice[1]:
            out.append(f"{key}.slice={list(f.slice)}: expected [start, stop] with 0 <= start < stop")
        else:
            spans.append((f.slice[0], f.slice[1], f.name))
    names = [f.name for f in task.fields]
    out += [f"env.task.fields: the name {n!r} is used twice" for n in sorted({n for n in names if names.count(n) > 1})]
    end = 0
    for start, stop, name in sorted(spans):
        if start > end:
            out.append(f"env.task.fields: slots [{end}, {start}) are in no field (the gap before {name!r}); "
                       "give them a field or widen a neighbour's slice")
        elif start < end:
            out.append(f"env.task.fields: {name!r} (slice [{start}, {stop}]) overlaps the field before it, which ends "
                       f"at {end}")
        end = max(end, stop)
    if task.fields and task.rename:
        out.append("env.task.rename: renames derived fields; with env.task.fields given, name them there")
    return out


def _score_problems(task: TaskFileConfig, env_id: str) -> list[str]:
    s, out = task.score, []
    if s.kind not in SCORE_KINDS:
        return [f"env.task.score.kind={s.kind!r}: allowed: {list(SCORE_KINDS)}"]
    if s.kind in ("displacement", "final_distance") and bool(s.info_key) == bool(s.field):
        out.append(f"env.task.score.kind={s.kind}: set exactly one of score.info_key and score.field")
    if s.kind == "info" and not s.info_key:
        out.append("env.task.score.kind=info: set score.info_key (the info entry it reduces)")
    if s.reduce not in REDUCTIONS:
        out.append(f"env.task.score.reduce={s.reduce!r}: allowed: {list(REDUCTIONS)}")
    if s.kind == "function" and not (s.function and _target_ok(s.function)):
        out.append(f"env.task.score.function={s.function!r}: score.kind=function needs 'module:function'")
    if s.kind == "return" and not has_reference(task):
        out.append("env.task.score.kind=return: the return of a reference reward, and env.task.reference_reward=none")
    if s.field and task.fields and s.field not in {f.name for f in task.fields}:
        out.append(f"env.task.score.field={s.field!r}: not a field; fields: {[f.name for f in task.fields]}")
    if s.random is None:
        out.append("env.task.score.random: the uniform-random policy's quantity is not set (the score is measured "
                   f"from it); measure it with `python -m bird.envs anchor {env_id}` and set it")
    if s.scale is not None and s.scale <= 0:
        out.append(f"env.task.score.scale={s.scale}: must be > 0 or null")
    return out


def problems(env: EnvConfig) -> list[str]:
    """Every problem of `env.task` that shows without building the env, each naming its key."""
    task = env.task
    if task is None:
        return [f"env.id={env.id!r}: a gym-suite task is a task file, and this env has none (env.task); put one at "
                "env/gym/<task>.yaml on the config search path (docs/task_files.md)"]
    out = [f"env.task.wrappers[{i}].target={w.target!r}: expected 'module:Class'"
            for i, w in enumerate(task.wrappers) if not _target_ok(w.target)]
    out += _field_problems(task) + _score_problems(task, env.id)
    if task.success is not None and bool(task.success.info_key) == bool(task.success.function):
        out.append("env.task.success: set exactly one of success.info_key and success.function (or success: null)")
    if task.success is not None and task.success.function and not _target_ok(task.success.function):
        out.append(f"env.task.success.function={task.success.function!r}: expected 'module:function'")
    if task.expert is not None and not _target_ok(task.expert):
        out.append(f"env.task.expert={task.expert!r}: expected 'module:function' (returning a policy obs -> action)")
    if task.reference_reward not in ("env", "none") and not _target_ok(task.reference_reward):
        out.append(f"env.task.reference_reward={task.reference_reward!r}: allowed: env, none or 'module:function'")
    out += [f"env.task.source.show: {v!r} is not a source view; allowed: {list(SOURCE_VIEWS)}"
            for v in task.source.show if v not in SOURCE_VIEWS]
    return out


def has_reference(task: TaskFileConfig) -> bool:
    """The task declares a reference reward (the env's own, or a function)."""
    return task.reference_reward != "none"


def representations(task: TaskFileConfig) -> tuple[str, ...]:
    """The generate.env_representation values the task serves."""
    return (*[v for v in SOURCE_VIEWS if v in task.source.show], *BASE_VIEWS)


def read_env_file(path: Path) -> EnvConfig:
    """An env option file (`# @package env`, e.g. a task file) as a typed EnvConfig: an unknown key or a wrong type is
    a ValueError naming it."""
    try:
        return typed_env(OmegaConf.load(path), str(path))
    except OmegaConfBaseException as exc:
        raise ValueError(f"{path}: {exc}") from None


def typed_env(node: Any, where: str) -> EnvConfig:
    """An env section (a mapping) as a typed EnvConfig; a ValueError naming the bad key, prefixed with `where`."""
    try:
        env = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(EnvConfig), node))
    except OmegaConfBaseException as exc:
        raise ValueError(f"{where}: {exc}") from None
    assert isinstance(env, EnvConfig)
    return env
