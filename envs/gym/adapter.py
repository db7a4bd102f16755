"""TaskAdapter of a task file: the env it names (a Gymnasium id or `module:Class`, with kwargs and wrappers), its
observation fields, score, success flag, reference reward and source views (docs/task_files.md)."""

from __future__ import annotations

import inspect
import math
from functools import cached_property
from typing import Any

import gymnasium as gym
import numpy as np

from bird.config.schema import EnvConfig, TaskFileConfig
from bird.envs.base import BenchmarkScoreWrapper, ObsField, ObsIndex, TaskAdapter, TaskSpec
from bird.envs.gym.episode import Episode, EpisodeTracker, default_scale, load_target
from bird.envs.gym.source import task_full_source, task_obs_code
from bird.envs.gym.taskfile import has_reference

__all__ = ["GymTaskAdapter", "make_task", "env_class"]


class _Reference(gym.Wrapper):
    """The step reward becomes the task's reference reward: the env's own (unchanged), a function's, or NaN (none)."""

    def __init__(self, env: gym.Env, source: str) -> None:
        super().__init__(env)
        self._fn = load_target(source, "env.task.reference_reward") if source not in ("env", "none") else None
        self._none = source == "none"
        self._obs: Any = None

    def reset(self, **kwargs: Any):
        self._obs, info = self.env.reset(**kwargs)
        return self._obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self._none:
            reward = math.nan
        elif self._fn is not None:
            reward = float(self._fn(self._obs, action, obs, info))
        self._obs = obs
        return obs, reward, terminated, truncated, info


class _Success(gym.Wrapper):
    """Sets info["success"] from the task file's success flag (an info key, or a function of (obs, info))."""

    def __init__(self, env: gym.Env, info_key: str | None, function: str | None) -> None:
        super().__init__(env)
        self._key = info_key
        self._fn = load_target(function, "env.task.success.function") if function else None

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self._key is not None and self._key not in info:
            raise ValueError(f"env.task.success.info_key={self._key!r}: the env's info has no such key; keys: "
                             f"{sorted(info)}")
        flag = info[self._key] if self._key is not None else self._fn(obs, info)  # type: ignore[misc]
        return obs, reward, terminated, truncated, {**info, "success": bool(flag)}


class _Recorder(gym.Wrapper):
    """Keeps the current episode (observations, actions, reference rewards, infos) for the score."""

    def __init__(self, env: gym.Env, fields: dict[str, tuple[int, int]], dt: float) -> None:
        super().__init__(env)
        self._fields, self._dt = fields, dt
        self._rows: dict[str, list] = {"obs": [], "actions": [], "rewards": [], "infos": []}
        self._terminated = False

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        self._rows = {"obs": [np.asarray(obs, dtype=np.float64)], "actions": [], "rewards": [], "infos": [dict(info)]}
        self._terminated = False
        return obs, info

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        for key, value in (("obs", np.asarray(obs, dtype=np.float64)), ("actions", np.asarray(action, dtype=np.float64)),
                           ("rewards", float(reward)), ("infos", dict(info))):
            self._rows[key].append(value)
        self._terminated = bool(terminated)
        return obs, reward, terminated, truncated, info

    def episode(self) -> Episode:
        rows = self._rows
        act = np.stack(rows["actions"]).reshape(len(rows["actions"]), -1) if rows["actions"] else np.zeros((0, 0))
        return Episode(np.stack(rows["obs"]), act, np.asarray(rows["rewards"], dtype=np.float64), rows["infos"],
                       self._terminated, self._dt, self._fields)


def env_class(task: TaskFileConfig) -> type:
    """The env's class, without building it: the entry point of a registered Gymnasium id, or `module:Class`."""
    if task.make in gym.registry:
        entry = gym.registry[task.make].entry_point
        return entry if isinstance(entry, type) else load_target(str(entry), "env.task.make")
    if ":" not in task.make:
        raise ValueError(f"env.task.make={task.make!r}: not a registered Gymnasium id, nor 'module:Class' (an id "
                         "another package registers needs that package imported first)")
    cls = load_target(task.make, "env.task.make")
    if not (isinstance(cls, type) and issubclass(cls, gym.Env)):
        raise ValueError(f"env.task.make={task.make!r}: names {cls!r}, not a gymnasium.Env subclass")
    return cls


def _takes(cls: type, name: str) -> bool:
    params = inspect.signature(cls.__init__).parameters
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _derived_fields(space: gym.Space, rename: dict[str, str]) -> list[ObsField]:
    """One field per key of a Dict space, else one per slot of the flattened space; names renamed by `rename`."""
    if isinstance(space, gym.spaces.Dict):
        fields, start = [], 0
        for key, sub in space.spaces.items():
            size = int(gym.spaces.flatdim(sub))
            fields.append(ObsField(str(key), start, size, "other", f"observation entry {key!r} (flattened, {size} slots)"))
            start += size
    else:
        low = np.ravel(getattr(space, "low", np.full(gym.spaces.flatdim(space), -np.inf)))
        high = np.ravel(getattr(space, "high", np.full(gym.spaces.flatdim(space), np.inf)))
        fields = [ObsField(f"obs_{i}", i, 1, "other", f"observation entry {i}"
                           + (f", in [{lo:g}, {hi:g}]" if np.isfinite(lo) and np.isfinite(hi) else ""))
                  for i, (lo, hi) in enumerate(zip(low, high, strict=True))]
    unknown = sorted(set(rename) - {f.name for f in fields})
    if unknown:
        raise ValueError(f"env.task.rename: {unknown} are not derived field names; derived: {[f.name for f in fields]}")
    return [ObsField(rename.get(f.name, f.name), f.start, f.size, f.kind, f.description) for f in fields]


def _action_box(space: gym.Space, make: str) -> tuple[tuple[float, ...], tuple[float, ...], dict[str, Any]]:
    """(low, high, spec extras) of the action: a Box's bounds, or a Discrete(n) space as one action slot holding the
    integer choice start..start+n-1 (a reward program reads it as a float; extras action_kind, action_n)."""
    if isinstance(space, gym.spaces.Box):
        return tuple(float(v) for v in np.ravel(space.low)), tuple(float(v) for v in np.ravel(space.high)), {}
    if isinstance(space, gym.spaces.Discrete):
        start = int(space.start)
        return (float(start),), (float(start + space.n - 1),), {"action_kind": "discrete", "action_n": int(space.n)}
    raise ValueError(f"env.task.make={make!r}: its action space {space} is neither a Box nor a Discrete; bird's "
                     "learners and reward programs take one of those")


class GymTaskAdapter(TaskAdapter):
    """A task of the gym suite, read from its task file (`cfg.task`)."""

    def __init__(self, task: str, cfg: EnvConfig) -> None:
        if cfg.task is None:
            raise ValueError(f"env.id={cfg.id!r}: a gym-suite task needs its task file (env.task); docs/task_files.md")
        self.task, self.cfg, self.file = task, cfg, cfg.task

    @cached_property
    def env_cls(self) -> type:
        return env_class(self.file)

    def _base(self, render_mode: str | None = None, width: int | None = None, height: int | None = None,
              camera_name: str | None = None) -> gym.Env:
        """The env with the horizon and the file's wrappers (innermost first), flattened to a 1-D Box."""
        kwargs = dict(self.file.kwargs)
        if render_mode is not None:
            kwargs["render_mode"] = render_mode
            extra = {"width": width, "height": height, "camera_name": camera_name}
            kwargs |= {k: v for k, v in extra.items() if v is not None and _takes(self.env_cls, k)}
        if self.file.make in gym.registry:
            env = gym.make(self.file.make, max_episode_steps=self.cfg.horizon, **kwargs)
        else:
            env = gym.wrappers.TimeLimit(self.env_cls(**kwargs), max_episode_steps=self.cfg.horizon)
        for w in self.file.wrappers:
            env = load_target(w.target, "env.task.wrappers")(env, **w.kwargs)
        space = env.observation_space
        if not (isinstance(space, gym.spaces.Box) and len(space.shape) == 1):
            env = gym.wrappers.FlattenObservation(env)
        return env

    @cached_property
    def _probe(self) -> gym.Env:
        return self._base()

    @cached_property
    def spec(self) -> TaskSpec:  # type: ignore[override]
        probe = self._probe
        low, high, extra = _action_box(probe.action_space, self.file.make)
        dim = int(probe.observation_space.shape[0])
        index = self.obs_index(dim)
        code = task_obs_code(self.file, self.env_cls) if "obs_code" in self.file.source.show else ""
        extra |= {"make": self.file.make, "dt": self.dt, "score_kind": self.file.score.kind}
        if "full_source" in self.file.source.show:
            extra["full_source"] = task_full_source(self.file, self.env_cls)
        return TaskSpec(
            env_id=self.cfg.id, suite="gym", task=self.task, description=self.cfg.description,
            horizon=self.cfg.horizon, obs_index=index, action_dim=len(low), action_low=low, action_high=high,
            score_definition=self.file.score.definition, env_code=code, extra=extra)

    def obs_index(self, dim: int) -> ObsIndex:
        """The named fields over an observation of `dim` slots (ValueError naming env.task.fields when they differ)."""
        if not self.file.fields:
            unflat = self._probe
            while isinstance(unflat, gym.wrappers.FlattenObservation):
                unflat = unflat.env
            return ObsIndex(tuple(_derived_fields(unflat.observation_space, dict(self.file.rename))), dim)
        fields = tuple(ObsField(f.name, f.slice[0], f.slice[1] - f.slice[0], f.kind, f.description, f.unit, f.axis)
                       for f in self.file.fields)
        end = max(f.start + f.size for f in fields)
        if end != dim:
            raise ValueError(f"env.task.fields cover slots [0, {end}) and the observation has {dim}: "
                             + (f"slots [{end}, {dim}) are in no field" if end < dim else
                                f"slots [{dim}, {end}) do not exist"))
        return ObsIndex(fields, dim)

    @property
    def dt(self) -> float:
        return float(getattr(self._probe.unwrapped, "dt", math.nan))

    def score_normalisation(self) -> tuple[float, float]:
        """(random-policy quantity, scale): score = (quantity - random) / scale."""
        score = self.file.score
        if score.random is None:
            raise ValueError(f"env.task.score.random is not set for {self.cfg.id}: measure it with "
                             f"`python -m bird.envs anchor {self.cfg.id}` and set it in the task file")
        return float(score.random), default_scale(score, self.cfg.horizon, self.dt)

    def make_env(self, seed: int | None = None, render_mode: str | None = None, *, camera_name: str | None = None,
                 width: int = 480, height: int = 480) -> gym.Env:
        """The env with the reference reward as its step reward, the success flag in info and the score outermost."""
        return self._wrap(self._base(render_mode, width, height, camera_name), *self.score_normalisation(), seed)

    def make_unanchored_env(self, seed: int | None = None) -> gym.Env:
        """The env with the raw episode quantity as its score (random 0, scale 1): for measuring the anchor."""
        return self._wrap(self._base(), 0.0, 1.0, seed)

    def _wrap(self, env: gym.Env, random_q: float, scale: float, seed: int | None) -> gym.Env:
        env = _Reference(env, self.file.reference_reward)
        if self.file.success is not None:
            env = _Success(env, self.file.success.info_key, self.file.success.function)
        fields = {f.name: (f.start, f.start + f.size) for f in self.spec.obs_index.fields}
        recorder = _Recorder(env, fields, self.dt)
        env = BenchmarkScoreWrapper(recorder, EpisodeTracker(self.file.score, recorder), random_q, scale)
        if seed is not None:
            env.action_space.seed(seed)
        return env

    @property
    def has_reference(self) -> bool:
        return has_reference(self.file)


class ScriptedGymTaskAdapter(GymTaskAdapter):
    """A task file that names a scripted expert (env.task.expert): its demonstrations come from that policy."""

    def expert_policy(self) -> Any:
        """The policy obs -> action that env.task.expert's factory returns."""
        return load_target(str(self.file.expert), "env.task.expert")()


def make_task(task: str, cfg: EnvConfig) -> GymTaskAdapter:
    """The adapter of a task file (one with expert_policy() where the file names a scripted expert)."""
    scripted = cfg.task is not None and cfg.task.expert is not None
    return (ScriptedGymTaskAdapter if scripted else GymTaskAdapter)(task, cfg)
