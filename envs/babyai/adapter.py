"""TaskAdapter for BabyAI (GRACE's benchmark): the fully observable symbolic grid, the agent's direction and the
mission as one flat observation, success from the level's own verifier, BabyAI's sparse reward as the reference.

The observation (float32): grid (H, W, 3) row-major as [y, x, channel] (Minigrid's encoding: object type, colour,
state; the agent's cell is (agent, red, direction)), then the direction, then the mission as Unicode code points
padded with zeros. Programs read `state["grid"]` as an (H, W, 3) array and `state["mission"]` as a str.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import textwrap
from functools import cached_property
from typing import Any

import gymnasium as gym
import numpy as np

from bird.config.schema import EnvConfig
from bird.envs.babyai.levels import Level, level
from bird.envs.base import BenchmarkScoreWrapper, ObsField, ObsIndex, SuccessTracker, TaskAdapter, TaskSpec

__all__ = ["BabyAIAdapter", "make_task", "MISSION_LEN", "SUBSTITUTES"]

MISSION_LEN = 96  # code points kept of a mission (the longest, SortColors', has 74)
SCORE_DEFINITION = ("success rate: 1 for an episode in which the level's instruction is completed (BabyAI's verifier; "
                    "the episode ends there), else 0 (GRACE Tables 2-3: final success rate)")
SUBSTITUTES = (
    "BabyAI policy: SB3 PPO with a small CNN over the symbolic grid and a character embedding of the mission "
    "(bird/learners/grid_policy.py) in place of GRACE's PPO-trained VLM llava-onevision-qwen2-0.5b-ov-hf (App. A.4 "
    "Table 4), at bird's budget in place of 1e7 steps",
    "BabyAI negatives: a uniform-random policy in place of GRACE's randomly initialised agent (§5.1)",
)
_NEW_LEVEL = ("PlaceBetween, OpenMatchingDoor, SortColors: bird's own minigrid levels written from GRACE App. A.3 "
              "(the paper's code is unpublished)")


def _encoding_note() -> str:
    from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX, STATE_TO_IDX

    def table(d: dict[str, int]) -> str:
        return ", ".join(f"{k}={v}" for k, v in d.items())

    return (f"integer ids: channel 0 object type ({table(OBJECT_TO_IDX)}); channel 1 colour ({table(COLOR_TO_IDX)}); "
            f"channel 2 state (door: {table(STATE_TO_IDX)}; the agent's cell: its direction)")


class SymbolicObs(gym.Wrapper):
    """The level's state as bird's flat observation (module docstring) and `info["success"]` from its verifier
    (BabyAI terminates with a positive reward exactly when the instruction is completed)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        u = env.unwrapped
        self.width, self.height = int(u.width), int(u.height)
        dim = self.height * self.width * 3 + 1 + MISSION_LEN
        self.observation_space = gym.spaces.Box(0.0, float(0x10FFFF), (dim,), np.float32)

    def observe(self) -> np.ndarray:
        from minigrid.core.constants import COLOR_TO_IDX, OBJECT_TO_IDX

        u = self.env.unwrapped
        grid = u.grid.encode()  # (W, H, 3), indexed [x, y]
        x, y = (int(v) for v in u.agent_pos)
        grid[x, y] = (OBJECT_TO_IDX["agent"], COLOR_TO_IDX["red"], u.agent_dir)
        codes = np.zeros(MISSION_LEN, dtype=np.float32)
        text = [ord(c) for c in u.mission[:MISSION_LEN]]
        codes[: len(text)] = text
        return np.concatenate([grid.transpose(1, 0, 2).ravel().astype(np.float32),
                               np.array([u.agent_dir], dtype=np.float32), codes])

    def reset(self, **kwargs: Any):
        with contextlib.redirect_stdout(io.StringIO()):  # minigrid prints every rejected level sample
            _, info = self.env.reset(**kwargs)
        return self.observe(), info

    def step(self, action):
        _, reward, terminated, truncated, info = self.env.step(int(np.asarray(action).reshape(-1)[0]))
        info = {**info, "success": bool(terminated and reward > 0)}
        return self.observe(), float(reward), terminated, truncated, info


def _obs_index(height: int, width: int) -> ObsIndex:
    n = height * width * 3
    return ObsIndex((
        ObsField("grid", 0, n, "other", "the fully observable grid, one (type, colour, state) triple per cell, "
                                        "indexed [row y, column x]", _encoding_note(), shape=(height, width, 3)),
        ObsField("direction", n, 1, "other", "the direction the agent faces",
                 "0 = +x (right), 1 = +y (down), 2 = -x (left), 3 = -y (up)"),
        ObsField("mission", n + 1, MISSION_LEN, "text", "the episode's instruction in words"),
    ), n + 1 + MISSION_LEN)


class BabyAIAdapter(TaskAdapter):
    def __init__(self, task: str, cfg: EnvConfig) -> None:
        self.level: Level = level(task)
        if not 1 <= cfg.horizon <= 10_000:
            raise ValueError(f"babyai horizon must be in [1, 10000], got {cfg.horizon}")
        self.cfg = cfg

    def _raw(self, render_mode: str | None = None) -> gym.Env:
        if self.level.new:
            import bird.envs.babyai.new_levels  # noqa: F401  (registers the new levels' gym ids)
        else:
            import minigrid  # noqa: F401  (registers the BabyAI-* ids)
        return gym.make(self.level.gym_id, max_steps=self.cfg.horizon, render_mode=render_mode,
                        disable_env_checker=True)

    @cached_property
    def spec(self) -> TaskSpec:  # type: ignore[override]
        from bird.envs.babyai.source import level_source

        env = SymbolicObs(self._raw())
        n_actions = int(env.action_space.n)
        full = level_source(type(env.unwrapped)) + "\n\n" + _obs_code()
        substitutes = [*SUBSTITUTES, *([_NEW_LEVEL] if self.level.new else [])]
        env.close()
        return TaskSpec(
            env_id=self.cfg.id, suite="babyai", task=self.level.name, description=self.cfg.description,
            horizon=self.cfg.horizon, obs_index=_obs_index(env.height, env.width), action_dim=1,
            action_low=(0.0,), action_high=(float(n_actions - 1),), score_definition=SCORE_DEFINITION,
            env_code=_obs_code(),
            extra={"gym_id": self.level.gym_id, "new_level": self.level.new, "discrete_actions": n_actions,
                   "full_source": full,
                   "actions": "0 turn left, 1 turn right, 2 forward, 3 pick up, 4 drop, 5 toggle (open), 6 done",
                   "substitutes": substitutes},
        )

    def expert_policy(self) -> Any:
        """The BabyAI bot (extended to the new levels): a policy told each episode's env at its start."""
        from bird.envs.babyai.bot import BotPolicy

        return BotPolicy()

    def make_env(self, seed: int | None = None, render_mode: str | None = None) -> gym.Env:
        """The level (max_steps = the horizon) as bird's flat observation, the score wrapper outermost. Levels draw
        their layout at reset(seed=s); `seed` is unused (no benchmark-wide seed)."""
        return BenchmarkScoreWrapper(SymbolicObs(self._raw(render_mode)), SuccessTracker(), 0.0, 1.0)


def _obs_code() -> str:
    """Eureka's observation code: how the observation is built (no reward, no success check)."""
    body = textwrap.dedent(inspect.getsource(SymbolicObs.observe))
    return "class BabyAILevel(RoomGridLevel):\n    \"\"\"Rest of the environment omitted.\"\"\"\n\n" + \
        textwrap.indent(body, "    ")


def make_task(task: str, cfg: EnvConfig) -> BabyAIAdapter:
    return BabyAIAdapter(task, cfg)
