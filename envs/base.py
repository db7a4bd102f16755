"""What every task supplies: a TaskSpec (shown to generators, never the reference reward) and an env factory."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from bird.state_codec import register_saved

__all__ = ["ObsField", "ObsIndex", "TaskSpec", "TaskAdapter", "ScoreTracker", "SuccessTracker", "BenchmarkScoreWrapper",
           "eval_env", "score_scale"]

# Field kinds the offline synthesiser and the prompts understand.
FIELD_KINDS = (
    "position",
    "velocity",
    "angle",
    "angular_velocity",
    "angle_cos",
    "angle_sin",
    "quaternion",
    "goal",
    "gripper",
    "contact",
    "position_delta",
    "other",
    "text",  # a string as Unicode code points, padded with zeros (BabyAI's mission); programs read a str
)


@register_saved
@dataclass(frozen=True)
class ObsField:
    """A named slice obs[..., start:start+size] of the flat observation; `shape` (its product = size) is the array a
    program reads it as (BabyAI's (H, W, 3) grid), () for a flat vector."""

    name: str
    start: int
    size: int
    kind: str
    description: str = ""
    unit: str = ""
    axis: str = ""  # "x", "y", "z", "xyz" or "" (for positions and velocities along a world axis)
    always_zero: bool = False  # padding slots (e.g. Meta-World's unused second object)
    shape: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in FIELD_KINDS:
            raise ValueError(f"field {self.name}: kind {self.kind!r} not in {FIELD_KINDS}")
        if self.shape and int(np.prod(self.shape)) != self.size:
            raise ValueError(f"field {self.name}: shape {self.shape} does not hold its {self.size} slots")


@register_saved
@dataclass(frozen=True)
class ObsIndex:
    fields: tuple[ObsField, ...]
    dim: int

    def __post_init__(self) -> None:
        covered = np.zeros(self.dim, dtype=int)
        for f in self.fields:
            covered[f.start : f.start + f.size] += 1
        if not (covered == 1).all():
            raise ValueError(f"observation index must cover each of the {self.dim} slots exactly once")

    def split(self, obs: np.ndarray) -> dict[str, np.ndarray]:
        """obs (batch, dim) -> {name: (batch,) for size-1 fields, (batch, size) otherwise}."""
        obs = np.asarray(obs, dtype=np.float64)
        return {
            f.name: obs[:, f.start] if f.size == 1 else obs[:, f.start : f.start + f.size] for f in self.fields
        }

    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def to_json(self) -> list[dict[str, Any]]:
        return [asdict(f) for f in self.fields]


@register_saved
@dataclass(frozen=True)
class TaskSpec:
    """Everything about a task that a generator may see, plus the score's definition (not its value)."""

    env_id: str  # "mujoco/hopper"
    suite: str
    task: str
    description: str  # task text given to generators, judges, raters
    horizon: int
    obs_index: ObsIndex
    action_dim: int
    action_low: tuple[float, ...]
    action_high: tuple[float, ...]
    score_definition: str  # what the benchmark score measures (for humans and result.json)
    env_code: str = ""  # environment code shown in the "source" representation; reward/success code removed
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["obs_index"] = self.obs_index.to_json()
        d["obs_dim"] = self.obs_index.dim
        return d


class ScoreTracker(ABC):
    """Accumulates one episode's benchmark quantity from the simulator (never from a reward)."""

    @abstractmethod
    def reset(self, env: gym.Env, info: dict[str, Any]) -> None: ...

    @abstractmethod
    def step(self, env: gym.Env, info: dict[str, Any]) -> None: ...

    @abstractmethod
    def quantity(self) -> float:
        """The raw episode quantity; higher is better."""


class SuccessTracker(ScoreTracker):
    """Quantity 1.0 if info["success"] was set on at least one step of the episode, else 0.0 (Meta-World, BabyAI)."""

    def reset(self, env: Any, info: dict) -> None:
        self.hit = False

    def step(self, env: Any, info: dict) -> None:
        self.hit = self.hit or bool(info.get("success", 0.0))

    def quantity(self) -> float:
        return float(self.hit)


def score_scale(kind: str, random_quantity: float, horizon: int, dt: float) -> float:
    """The divisor of score = (quantity - random) / scale for the physical score kinds (Gym MuJoCo and Brax suites).

    displacement: horizon × dt, so the score is mean speed above random (m/s); survival: the steps random leaves
    to the horizon (whole horizon = 1); final_distance: |random distance| (zero distance = 1).
    """
    if kind == "displacement":
        return horizon * dt
    if kind == "survival":
        return max(horizon - random_quantity, 1.0)
    if kind == "final_distance":
        return max(abs(random_quantity), 1e-6)
    raise ValueError(f"unknown score kind {kind!r}")


class BenchmarkScoreWrapper(gym.Wrapper):
    """Adds info["bird_episode"] = {"quantity", "score"} at the last step of each episode.

    score = (quantity - random_quantity) / scale, so a uniform-random policy scores 0. With `end_on_success` set,
    a step whose info carries a true "success" flag ends the episode (terminated), as CARD's evaluation env does;
    suites without a success flag are unaffected.
    """

    def __init__(self, env: gym.Env, tracker: ScoreTracker, random_quantity: float, scale: float) -> None:
        super().__init__(env)
        self._tracker = tracker
        self._random = float(random_quantity)
        self._scale = float(scale) if scale else 1.0
        self.end_on_success = False

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        self._tracker.reset(self.env.unwrapped, info)
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._tracker.step(self.env.unwrapped, info)
        terminated = terminated or (self.end_on_success and bool(info.get("success", 0.0)))
        if terminated or truncated:
            q = self._tracker.quantity()
            info = dict(info)
            info["bird_episode"] = {"quantity": q, "score": (q - self._random) / self._scale}
        return obs, reward, terminated, truncated, info


class TaskAdapter(ABC):
    """One task of one suite. Subclasses build the spec and the env; everything else is shared."""

    spec: TaskSpec

    @abstractmethod
    def make_env(self, seed: int | None = None, render_mode: str | None = None) -> gym.Env:
        """A gymnasium env with the task's horizon and a BenchmarkScoreWrapper outermost.

        Its step reward is the reference reward (the env's shipped reward). Its observation is the flat
        vector that spec.obs_index describes.
        """

    def info_for_program(self, info: dict[str, Any]) -> dict[str, Any]:
        """The part of a step's info a reward program may read. Default: nothing (no success flag, no reward terms)."""
        return {}


def eval_env(adapter: TaskAdapter, end_on_success: bool = False) -> gym.Env:
    """An evaluation env of `adapter`; with end_on_success, an episode ends at the first step flagged successful."""
    env = adapter.make_env()
    env.end_on_success = end_on_success  # the BenchmarkScoreWrapper is outermost (TaskAdapter.make_env)
    return env
