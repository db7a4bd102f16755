"""TaskAdapter for the Brax suite: spec from the brax System, a gym view of one env, the benchmark score."""

from __future__ import annotations

import inspect
import json
import textwrap
import warnings
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from bird.config.schema import EnvConfig
from bird.envs.base import BenchmarkScoreWrapper, ScoreTracker, TaskAdapter, TaskSpec, score_scale
from bird.envs.brax.episodes import observation_size
from bird.envs.brax.score import episode_quantity, signal
from bird.envs.brax.tasks import TASKS, BraxTask
from bird.envs.mujoco.obs_index import derive_obs_index

__all__ = ["BraxAdapter", "make_task", "brax_env", "BASELINES_PATH", "anchor_key"]

BASELINES_PATH = Path(__file__).with_name("random_baselines.json")


@cache
def brax_env(brax_name: str, backend: str) -> Any:
    """The (unwrapped) brax env; building one parses the model, so each process builds it once."""
    from bird.jax_cache import enable_compilation_cache

    enable_compilation_cache()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Brax System, piplines and environments")
        from brax import envs

        return envs.get_environment(brax_name, backend=backend)


@cache
def _jitted(brax_name: str, backend: str) -> tuple[Any, Any]:
    """jit(reset), jit(step) of one env, shared by every gym view of it in the process (one compile each)."""
    import jax

    env = brax_env(brax_name, backend)
    return jax.jit(env.reset), jax.jit(env.step)


def anchor_key(task: str, backend: str) -> str:
    return f"{task}/{backend}"


class BraxGymEnv(gym.Env):
    """One brax env behind the gymnasium API (jitted reset/step; numpy in and out). `state` is the brax State."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, env: Any, jitted: tuple[Any, Any]) -> None:
        import jax

        self._env = env
        self._cpu = jax.devices("cpu")[0]  # one env at a time: the host CPU, whatever accelerator trains
        self._reset, self._step = jitted
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, (observation_size(env),), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (env.action_size,), np.float32)
        self.dt = float(env.dt)
        self.state: Any = None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        import jax

        super().reset(seed=seed)
        key = int(seed) if seed is not None else int(self.np_random.integers(2**31 - 1))
        with jax.default_device(self._cpu):
            self.state = self._reset(jax.random.PRNGKey(key))
        return np.asarray(self.state.obs, dtype=np.float32), {}

    def step(self, action: np.ndarray):
        import jax
        import jax.numpy as jnp

        action = np.clip(np.asarray(action, dtype=np.float32), -1.0, 1.0)
        with jax.default_device(self._cpu):
            self.state = self._step(self.state, jnp.asarray(action))
        obs = np.asarray(self.state.obs, dtype=np.float32)
        return obs, float(self.state.reward), bool(float(self.state.done) > 0.5), False, {}


class _Tracker(ScoreTracker):
    """The episode quantity from envs/brax/score.py, read off the gym view's brax state."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def _signal(self, env: BraxGymEnv) -> float:
        return float(signal(self.kind, env.state))

    def reset(self, env: Any, info: dict) -> None:
        self.first = self.last = self._signal(env)
        self.steps = 0

    def step(self, env: Any, info: dict) -> None:
        self.last, self.steps = self._signal(env), self.steps + 1

    def quantity(self) -> float:
        return float(episode_quantity(self.kind, self.first, self.last, self.steps))


def _full_source(env_cls: type) -> str:
    """The brax env's module without its reward code (the Gym suite's stripper); string literals that mention a
    reward (an assertion message) are blanked first."""
    import ast

    from bird.envs.mujoco.source import REWARD_NAME, full_source

    tree = ast.parse(inspect.getsource(inspect.getmodule(env_cls)))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and REWARD_NAME.search(node.value):
            node.value = ""
    return full_source(env_cls, ast.unparse(tree), origin="Brax")


def load_random_baselines() -> dict[str, Any]:
    return json.loads(BASELINES_PATH.read_text()) if BASELINES_PATH.exists() else {}


class BraxAdapter(TaskAdapter):
    """A Brax task (a different simulator from the Gym MuJoCo suite, with the same score definitions)."""

    def __init__(self, task: str, cfg: EnvConfig) -> None:
        if task not in TASKS:
            raise ValueError(f"unknown brax task {task!r}; available: {sorted(TASKS)}")
        self.task, self.cfg = task, cfg
        self.defn: BraxTask = TASKS[task]
        self.backend = cfg.backend or self.defn.default_backend
        if self.backend not in self.defn.backends:
            raise ValueError(f"env.backend={self.backend!r}: brax {self.defn.brax_name} supports {list(self.defn.backends)}")

    @property
    def env(self) -> Any:
        """The unwrapped brax env (shared within the process)."""
        return brax_env(self.defn.brax_name, self.backend)

    @cached_property
    def spec(self) -> TaskSpec:  # type: ignore[override]
        env = self.env
        cls = type(env)
        code = f"class {cls.__name__}(PipelineEnv):\n    \"\"\"Rest of the environment definition omitted.\"\"\"\n\n"
        code += textwrap.indent(textwrap.dedent(inspect.getsource(cls._get_obs)), "    ")
        return TaskSpec(
            env_id=self.cfg.id, suite="brax", task=self.task, description=self.cfg.description,
            horizon=self.cfg.horizon, obs_index=derive_obs_index(env.sys.mj_model, self.defn.layout),
            action_dim=int(env.action_size), action_low=(-1.0,) * env.action_size,
            action_high=(1.0,) * env.action_size, score_definition=self.defn.score_definition, env_code=code,
            extra={"brax_env": self.defn.brax_name, "backend": self.backend, "dt": float(env.dt),
                   "score_kind": self.defn.score, "full_source": _full_source(cls)},
        )

    def score_normalisation(self) -> tuple[float, float]:
        """(random-policy quantity, scale); the anchor is measured per backend (python -m bird.envs.brax.baselines)."""
        key = anchor_key(self.task, self.backend)
        base = load_random_baselines().get(key)
        if base is None:
            raise ValueError(f"no random-policy anchor for brax {key}: measure it with "
                             f"`python -m bird.envs.brax.baselines --tasks {self.task} --backend {self.backend}`")
        random_q = float(base["quantity_mean"])
        return random_q, score_scale(self.defn.score, random_q, self.cfg.horizon, float(self.env.dt))

    def make_env(self, seed: int | None = None, render_mode: str | None = None) -> gym.Env:
        if render_mode is not None:
            raise ValueError("the brax suite renders no frames (judge.mode=vlm needs them; use judge.mode=state_text)")
        jitted = _jitted(self.defn.brax_name, self.backend)
        env = gym.wrappers.TimeLimit(BraxGymEnv(self.env, jitted), max_episode_steps=self.cfg.horizon)
        env = BenchmarkScoreWrapper(env, _Tracker(self.defn.score), *self.score_normalisation())
        if seed is not None:
            env.action_space.seed(seed)
        return env


def make_task(task: str, cfg: EnvConfig) -> BraxAdapter:
    return BraxAdapter(task, cfg)
