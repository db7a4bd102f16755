"""TaskAdapter for the Gym MuJoCo v5 tasks: spec, env factory and the benchmark score trackers."""

from __future__ import annotations

import inspect
import json
import textwrap
from functools import cached_property
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from bird.config.schema import EnvConfig
from bird.envs.base import BenchmarkScoreWrapper, ScoreTracker, TaskAdapter, TaskSpec
from bird.envs.mujoco.obs_index import derive_obs_index
from bird.envs.mujoco.source import full_source
from bird.envs.mujoco.tasks import TASKS, MujocoTask

__all__ = ["MujocoAdapter", "MissingAnchorError", "make_task", "BASELINES_PATH", "ANCHOR_COMMAND"]

BASELINES_PATH = Path(__file__).with_name("random_baselines.json")
ANCHOR_COMMAND = "python -m bird.envs.mujoco.baselines"


class MissingAnchorError(RuntimeError):
    """A task has no stored random-policy anchor, so its score (quantity above random) cannot be computed."""


class _Displacement(ScoreTracker):
    def reset(self, env: Any, info: dict) -> None:
        self.x0 = self.x = float(env.data.qpos[0])

    def step(self, env: Any, info: dict) -> None:
        self.x = float(env.data.qpos[0])

    def quantity(self) -> float:
        return self.x - self.x0


class _Survival(ScoreTracker):
    def reset(self, env: Any, info: dict) -> None:
        self.steps = 0

    def step(self, env: Any, info: dict) -> None:
        self.steps += 1

    def quantity(self) -> float:
        return float(self.steps)


class _FinalDistance(ScoreTracker):
    def reset(self, env: Any, info: dict) -> None:
        self.step(env, info)

    def step(self, env: Any, info: dict) -> None:
        delta = env.data.body("fingertip").xpos[:2] - env.data.body("target").xpos[:2]
        self.d = float(np.linalg.norm(delta))

    def quantity(self) -> float:
        return -self.d


_TRACKERS = {"displacement": _Displacement, "survival": _Survival, "final_distance": _FinalDistance}


def load_random_baselines() -> dict[str, Any]:
    if not BASELINES_PATH.exists():
        return {}
    return json.loads(BASELINES_PATH.read_text())


def _obs_code(env_cls: type) -> str:
    """Eureka-style env code: the class header and the observation method only (no reward, no docstring)."""
    body = textwrap.dedent(inspect.getsource(env_cls._get_obs))
    return (
        f"class {env_cls.__name__}(MujocoEnv):\n"
        f'    """Rest of the environment definition omitted."""\n\n' + textwrap.indent(body, "    ")
    )


class MujocoAdapter(TaskAdapter):
    def __init__(self, task: str, cfg: EnvConfig) -> None:
        if task not in TASKS:
            raise ValueError(f"unknown mujoco task {task!r}; available: {sorted(TASKS)}")
        self.task = task
        self.cfg = cfg
        self.defn: MujocoTask = TASKS[task]

    @cached_property
    def _probe(self) -> gym.Env:
        return gym.make(self.defn.gym_id)

    @cached_property
    def spec(self) -> TaskSpec:  # type: ignore[override]
        env = self._probe.unwrapped
        space = self._probe.action_space
        return TaskSpec(
            env_id=self.cfg.id,
            suite="mujoco",
            task=self.task,
            description=self.cfg.description,
            horizon=self.cfg.horizon,
            obs_index=derive_obs_index(env.model, self.defn.layout),
            action_dim=int(space.shape[0]),
            action_low=tuple(float(v) for v in space.low),
            action_high=tuple(float(v) for v in space.high),
            score_definition=self.defn.score_definition,
            env_code=_obs_code(type(env)),
            extra={"gym_id": self.defn.gym_id, "dt": float(env.dt), "full_source": full_source(type(env))},
        )

    def score_normalisation(self) -> tuple[float, float]:
        """(random-policy quantity, scale) so that score = (quantity - random) / scale.

        Raises MissingAnchorError when random_baselines.json has no entry for the task: a score measured from 0
        instead of from the random policy would look valid and be wrong."""
        base = load_random_baselines().get(self.task)
        if not base or "quantity_mean" not in base:
            raise MissingAnchorError(
                f"mujoco task {self.task!r} has no random-policy anchor in {BASELINES_PATH.name} (its score is the "
                f"episode quantity above a uniform-random policy's); measure it with "
                f"`{ANCHOR_COMMAND} --tasks {self.task}`")
        random_q = float(base["quantity_mean"])
        horizon = self.cfg.horizon
        if self.defn.score == "displacement":
            scale = horizon * float(self._probe.unwrapped.dt)  # score = mean speed above random, m/s
        elif self.defn.score == "survival":
            scale = max(horizon - random_q, 1.0)
        else:
            scale = max(abs(random_q), 1e-6)
        return random_q, scale

    def make_env(self, seed: int | None = None, render_mode: str | None = None, *, camera_name: str | None = None,
                 width: int = 480, height: int = 480) -> gym.Env:
        """Gymnasium v5 env with the score wrapper outermost; width/height/camera_name apply when rendering
        (camera_name None = the env's default tracking camera)."""
        render = {"render_mode": render_mode, "width": width, "height": height,
                  **({"camera_name": camera_name} if camera_name else {})}
        random_q, scale = self.score_normalisation()
        env = gym.make(self.defn.gym_id, max_episode_steps=self.cfg.horizon,
                       **(render if render_mode else {"render_mode": None}))
        return self._wrap(env, random_q, scale, seed)

    def make_unanchored_env(self, seed: int | None = None) -> gym.Env:
        """The env with the raw episode quantity only (score = quantity): for measuring the anchor itself."""
        return self._wrap(gym.make(self.defn.gym_id, max_episode_steps=self.cfg.horizon), 0.0, 1.0, seed)

    def _wrap(self, env: gym.Env, random_q: float, scale: float, seed: int | None) -> gym.Env:
        env = BenchmarkScoreWrapper(env, _TRACKERS[self.defn.score](), random_q, scale)
        if seed is not None:
            env.action_space.seed(seed)
        return env


def make_task(task: str, cfg: EnvConfig) -> MujocoAdapter:
    return MujocoAdapter(task, cfg)
