"""A task file's benchmark quantity: the episode record a score reads, the built-in score kinds, and the tracker that
feeds the shared BenchmarkScoreWrapper."""

from __future__ import annotations

import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from bird.config.schema import TaskScoreConfig
from bird.envs.base import ScoreTracker

__all__ = ["Episode", "EpisodeTracker", "SCORE_KINDS", "REDUCTIONS", "load_target", "episode_quantity", "default_scale"]

SCORE_KINDS = ("return", "displacement", "survival", "final_distance", "info", "function")
REDUCTIONS: dict[str, Callable[[np.ndarray], float]] = {
    "sum": lambda v: float(np.sum(v)), "mean": lambda v: float(np.mean(v)), "last": lambda v: float(v[-1]),
    "max": lambda v: float(np.max(v)), "min": lambda v: float(np.min(v)), "any": lambda v: float(np.any(v)),
}


@dataclass(frozen=True)
class Episode:
    """One episode as a score function reads it.

    obs: (T+1, D) flat observations from the reset on; actions: (T, A); rewards: (T,) the task's reference reward
    per step (NaN where the task has none); infos: T+1 dicts, the reset's first; terminated: the env ended it (not
    the horizon); dt: seconds per step (NaN when the env has no dt); fields: field name -> (start, stop) of obs.
    """

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    infos: list[dict[str, Any]]
    terminated: bool
    dt: float
    fields: dict[str, tuple[int, int]]

    def field(self, name: str) -> np.ndarray:
        """obs[:, start:stop] of a named field: (T+1,) for a one-slot field, else (T+1, size)."""
        start, stop = self.fields[name]
        return self.obs[:, start] if stop - start == 1 else self.obs[:, start:stop]

    def info(self, key: str, steps_only: bool = False) -> np.ndarray:
        """info[key] of every step (the reset's first unless steps_only), as an array."""
        infos = self.infos[1:] if steps_only else self.infos
        missing = [k for k, i in enumerate(infos) if key not in i]
        if missing:
            raise KeyError(f"info key {key!r} is missing at step {missing[0] + (1 if steps_only else 0)}; keys there: "
                           f"{sorted(infos[missing[0]])}")
        return np.asarray([np.asarray(i[key], dtype=np.float64) for i in infos])


def load_target(target: str, key: str) -> Any:
    """The object `module:attr[.attr]` names; a ValueError naming the config `key` when it cannot be loaded."""
    module, sep, attr = target.partition(":")
    if not sep or not module or not attr:
        raise ValueError(f"{key}={target!r}: expected 'module:name'")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{key}={target!r} cannot be loaded: {type(exc).__name__}: {exc}") from None
    return obj


def _value(ep: Episode, score: TaskScoreConfig) -> np.ndarray:
    """The per-state series a displacement or final distance reads: an info key or an observation field."""
    return ep.info(score.info_key) if score.info_key else ep.field(str(score.field))


def episode_quantity(score: TaskScoreConfig, ep: Episode) -> float:
    """The raw episode quantity of `score.kind` (higher is better), negated where `score.negate`."""
    value = _quantity(score, ep)
    return -value if score.negate else value


def _quantity(score: TaskScoreConfig, ep: Episode) -> float:
    if score.kind == "return":
        return float(np.sum(ep.rewards))
    if score.kind == "survival":
        return float(len(ep.actions))
    if score.kind == "displacement":
        v = _value(ep, score)
        return float(v[-1] - v[0])
    if score.kind == "final_distance":
        return -float(np.linalg.norm(np.atleast_1d(_value(ep, score)[-1])))
    if score.kind == "info":
        return REDUCTIONS[score.reduce](ep.info(str(score.info_key), steps_only=True))
    if score.kind == "function":
        return float(load_target(str(score.function), "env.task.score.function")(ep))
    raise ValueError(f"env.task.score.kind={score.kind!r}: allowed: {list(SCORE_KINDS)}")


def default_scale(score: TaskScoreConfig, horizon: int, dt: float) -> float:
    """The divisor when the task file gives none: displacement horizon * dt (the score is mean speed above random),
    survival the steps random leaves to the horizon, otherwise |random| (random = 0, the quantity 0 = 1), or 1."""
    if score.scale is not None:
        return float(score.scale)
    random = float(score.random or 0.0)
    if score.kind == "displacement" and math.isfinite(dt) and dt > 0:
        return horizon * dt
    if score.kind == "survival":
        return max(horizon - random, 1.0)
    return abs(random) if abs(random) > 1e-9 else 1.0


class EpisodeTracker(ScoreTracker):
    """Keeps the episode the recorder wrapper saw and computes the task file's quantity at its end."""

    def __init__(self, score: TaskScoreConfig, recorder: Any) -> None:
        self.score, self.recorder = score, recorder

    def reset(self, env: Any, info: dict) -> None:
        pass

    def step(self, env: Any, info: dict) -> None:
        pass

    def quantity(self) -> float:
        return episode_quantity(self.score, self.recorder.episode())
