"""TaskAdapter for Meta-World MT10 v3: spec, env factory (MT1) and the success-based benchmark score."""

from __future__ import annotations

import inspect
import json
import textwrap
import warnings
from collections.abc import Callable
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding

from bird.config.schema import EnvConfig
from bird.envs.base import BenchmarkScoreWrapper, SuccessTracker, TaskAdapter, TaskSpec
from bird.envs.metaworld.abstraction import class_abstraction
from bird.envs.metaworld.obs_index import derive_obs_index
from bird.envs.metaworld.source import base_class_excerpt, check_no_leak, task_source
from bird.envs.metaworld.tasks import HORIZON, SCORE_DEFINITION, TASKS, MetaWorldTask, canonical_task

__all__ = ["MetaWorldAdapter", "make_task", "MEASUREMENTS_PATH", "load_measurements"]

MEASUREMENTS_PATH = Path(__file__).with_name("measurements.json")


class SeededReset(gym.Wrapper):
    """Makes reset(seed=s) reproducible: MT1 ignores the seed, so reseed the RNG that picks the goal variant."""

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self.env.unwrapped.np_random, _ = seeding.np_random(seed)
        return self.env.reset(options=options)


class _UprightRender(gym.Wrapper):
    """Meta-World's fixed cameras ("corner", "corner2", ...) render upside down: turn frames by 180 degrees."""

    def render(self):
        frame = self.env.render()
        return None if frame is None else np.ascontiguousarray(frame[::-1, ::-1])


def load_measurements() -> dict[str, Any]:
    """Measured success rates (scripted expert, uniform random) per task; {} before the first measurement."""
    return json.loads(MEASUREMENTS_PATH.read_text()) if MEASUREMENTS_PATH.exists() else {}


MT1_ID = "bird/MetaWorldMT1"  # "Meta-World/MT1" with its benchmark made once per process (_mt1_benchmark)


@cache
def _mt1_benchmark(mw_name: str, seed: int) -> tuple[type, tuple[Any, ...]]:
    """MT1's env class and goal variants for one task and benchmark seed. Meta-World draws the 50 variants by making
    an env and resetting it 50 times (0.45 s, 80 % of making an env), and would do so for every env."""
    import metaworld

    benchmark = metaworld.MT1(mw_name, seed=seed)
    return benchmark.train_classes[mw_name], tuple(benchmark.train_tasks)


def _mt1_entry_point(env_name: str, seed: int, use_one_hot: bool = False, **kwargs: Any) -> gym.Env:
    """What metaworld.make_mt_envs builds for one task (metaworld==3.1.1), from the benchmark made once."""
    import metaworld

    env_cls, tasks = _mt1_benchmark(env_name, seed)
    return metaworld._init_each_env(env_cls=env_cls, tasks=list(tasks), seed=seed, use_one_hot=use_one_hot,
                                    num_tasks=1, **kwargs)


def _make_mt1(mw_name: str, seed: int, horizon: int, **kwargs: Any) -> gym.Env:
    """gym.make("Meta-World/MT1", ...), the same env and wrappers (tests/envs/test_metaworld_env.py), made in a
    fifth of the time after the first env of a task."""
    if MT1_ID not in gym.registry:
        gym.register(MT1_ID, entry_point=_mt1_entry_point)
    return gym.make(MT1_ID, env_name=mw_name, seed=seed, max_episode_steps=horizon, disable_env_checker=True, **kwargs)


@cache
def _probe(mw_name: str) -> Any:
    """One reset raw env per task for building specs (one reset, where MT1 would make 50: as metaworld's
    own _make_tasks does, let the env draw its own positions)."""
    from metaworld.env_dict import ALL_V3_ENVIRONMENTS

    env = ALL_V3_ENVIRONMENTS[mw_name]()
    env._freeze_rand_vec = False
    env._set_task_called = True
    env.seed(0)
    env.seeded_rand_vec = True
    env.reset()
    return env


def _obs_code(env_cls: type) -> str:
    """Eureka-style env code: class header and the methods that build the observation."""
    task_methods = [getattr(env_cls, n) for n in ("_get_pos_objects", "_get_quat_objects")]
    base_methods = [getattr(env_cls, n) for n in ("_get_curr_obs_combined_no_goal", "_get_obs")]
    body = "\n".join(textwrap.dedent(inspect.getsource(m)) for m in task_methods + base_methods)
    code = (
        f"class {env_cls.__name__}(SawyerXYZEnv):\n"
        '    """Rest of the environment definition omitted."""\n\n' + textwrap.indent(body, "    ")
    )
    check_no_leak(code)
    return code


def _action_note(env: Any) -> str:
    lo, hi = np.round(env.mocap_low, 3).tolist(), np.round(env.mocap_high, 3).tolist()
    return (
        "action: np.ndarray of shape (4,), each entry in [-1, 1].\n"
        f"action[:3] moves the hand target by action * {env.action_scale:g} m per step along x, y, z\n"
        f"(clipped to the workspace {lo} .. {hi}); action[3] is the gripper effort (+1 closes, -1 opens).\n"
        f"One step is {env.dt:g} s of simulation."
    )


def _fields_note(spec_index: Any) -> str:
    rows = [f"#   {f.name} ({f.size}): {f.description}" for f in spec_index.fields]
    return "# The reward program receives obs / next_obs as dicts keyed by these names:\n" + "\n".join(rows)


class MetaWorldAdapter(TaskAdapter):
    def __init__(self, task: str, cfg: EnvConfig) -> None:
        self.task = canonical_task(task)
        if not 1 <= cfg.horizon <= HORIZON:
            raise ValueError(f"metaworld horizon must be in [1, {HORIZON}] (Meta-World's limit), got {cfg.horizon}")
        self.cfg = cfg
        self.defn: MetaWorldTask = TASKS[self.task]

    @cached_property
    def spec(self) -> TaskSpec:  # type: ignore[override]
        env = _probe(self.defn.mw_name)
        index = derive_obs_index(env, self.defn)
        space = env.action_space
        class_name = "".join(w.capitalize() for w in self.task.split("_")) + "Env"
        full = "\n\n".join([base_class_excerpt(), task_source(type(env)), _fields_note(index)])
        abstraction = class_abstraction(class_name, self.cfg.description, index, _action_note(env))
        check_no_leak(full)
        check_no_leak(abstraction)
        measured = load_measurements().get(self.task, {})
        return TaskSpec(
            env_id=self.cfg.id,
            suite="metaworld",
            task=self.task,
            description=self.cfg.description,
            horizon=self.cfg.horizon,
            obs_index=index,
            action_dim=int(space.shape[0]),
            action_low=tuple(float(v) for v in space.low),
            action_high=tuple(float(v) for v in space.high),
            score_definition=SCORE_DEFINITION,
            env_code=_obs_code(type(env)),
            extra={
                "metaworld_name": self.defn.mw_name,
                "dt": float(env.dt),
                "full_source": full,
                "abstraction": abstraction,
                "random_success_rate": measured.get("random_success_rate"),
                "scripted_success_rate": measured.get("scripted_success_rate"),
            },
        )

    def expert_policy(self) -> Callable[[np.ndarray], np.ndarray]:
        """Meta-World's scripted policy for this task: obs (39,) -> action (4,), clipped to [-1, 1]."""
        from metaworld import policies

        # Meta-World's policies warn that their gains exceed the action box; the env clips, and so do we.
        warnings.filterwarnings("ignore", message=r"Constant\(s\) may be too high", category=UserWarning)
        policy = getattr(policies, self.defn.policy)()
        # a copy: some policies (door-open) edit the observation they are given in place
        return lambda obs: np.clip(policy.get_action(np.array(obs, dtype=np.float64)), -1.0, 1.0).astype(np.float32)

    def score_normalisation(self) -> tuple[float, float]:
        """(random quantity, scale): (0, 1), so the score is the raw success fraction as BIRD defines it.

        The measured random success rate is recorded in measurements.json and spec.extra, not subtracted.
        """
        return 0.0, 1.0

    def make_env(
        self,
        seed: int | None = None,
        render_mode: str | None = None,
        *,
        camera_name: str | None = "corner2",
        width: int = 480,
        height: int = 480,
    ) -> gym.Env:
        """MT1 env with the score wrapper outermost; a goal variant is picked at every reset, as MT1 does.

        :param seed: MT1's benchmark seed, which draws its 50 goal variants (None = 0: every env of a run,
            training and evaluation alike, shares one variant set). reset(seed=s) picks the variant from s.
        :param camera_name: camera for render_mode="rgb_array" (Meta-World's "corner" cameras are turned upright).
        """
        render = {"render_mode": render_mode, "camera_name": camera_name, "width": width, "height": height}
        env = _make_mt1(self.defn.mw_name, 0 if seed is None else seed, self.cfg.horizon, **(render if render_mode else {}))
        env = SeededReset(env)
        if render_mode == "rgb_array" and (camera_name or "").startswith("corner"):
            env = _UprightRender(env)
        return BenchmarkScoreWrapper(env, SuccessTracker(), *self.score_normalisation())


def make_task(task: str, cfg: EnvConfig) -> MetaWorldAdapter:
    return MetaWorldAdapter(task, cfg)
