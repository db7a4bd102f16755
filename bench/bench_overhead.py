"""Harness overhead: bird's training (the `sb3_ppo` learner as the executors call it: sandboxed reward program,
rollout relabelling, return scaling) vs raw SB3 PPO on the reference reward, side by side in one run, interleaved,
same env / steps / hyper-parameters.

    python bench/bench_overhead.py [--env mujoco/hopper] [--steps 20000] [--n-envs 4] [--repeats 3]
    python bench/bench_overhead.py --steps 256 --n-envs 2 --repeats 1 --sandbox-repeats 1   # a smoke run (seconds)

Both sides do the same work in the timed region: build the envs and the model, train, then one deterministic
evaluation episode (bird's learner always evaluates the policy it returns; raw SB3 runs the same greedy episode).
Wall and CPU time (this process and its reaped children, the reward worker included) are both reported: on a shared
machine the CPU ratio is the steadier one.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import record
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from bird.config.load import compose
from bird.envs.registry import make_adapter
from bird.executors.jobs import call_learner
from bird.learners.job import TrainJob, make_job
from bird.reward.factory import open_program

PROGRAM = """import numpy as np

def compute_reward(obs, action, next_obs, info):
    forward = next_obs["rootx_vel"]
    alive = np.ones(len(action))
    ctrl = -1e-3 * np.sum(np.square(action), axis=-1)
    return forward + alive + ctrl, {"forward": forward, "alive": alive, "ctrl": ctrl}
"""


def _job(args: argparse.Namespace, checkpoints: int, episodes: int, out: Path, steps: int | None = None) -> TrainJob:
    """The job the search would send for PROGRAM at this budget (bird's default config otherwise)."""
    steps = steps or args.steps
    cfg = compose([f"env={args.env}", f"budget.env_steps={steps}", f"budget.n_envs={args.n_envs}",
                   f"budget.n_checkpoints={checkpoints}", f"budget.eval_episodes={episodes}", "run.progress=false"])
    return make_job(cfg, "bench", PROGRAM, 0, steps, out)


def _ppo_kwargs(job: TrainJob) -> dict:
    t = job.train
    return dict(seed=job.seed, device="cpu", verbose=0, learning_rate=t.learning_rate, n_steps=job.n_steps,
                batch_size=job.batch_size, n_epochs=t.n_epochs, gamma=t.gamma, gae_lambda=t.gae_lambda,
                ent_coef=t.ent_coef, clip_range=t.clip_range, policy_kwargs={"net_arch": list(t.net_arch)})


def cpu_seconds() -> float:
    """CPU time of this process and its reaped children (the reward worker is one): less sensitive than wall time
    to other jobs on a shared machine."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measured(train: Callable[[TrainJob], int], job: TrainJob) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, env steps trained) of train(job)."""
    wall, cpu = time.perf_counter(), cpu_seconds()
    steps = train(job)
    return time.perf_counter() - wall, cpu_seconds() - cpu, steps


def raw_sb3(job: TrainJob) -> int:
    """Plain SB3: the env's own reward, VecNormalize for obs and reward, no harness; then one greedy episode."""
    adapter = make_adapter(job.env)
    venv = DummyVecEnv([lambda: adapter.make_env() for _ in range(job.n_envs)])
    venv.seed(job.seed)
    vecnorm = VecNormalize(venv, gamma=job.train.gamma)
    model = PPO("MlpPolicy", vecnorm, **_ppo_kwargs(job))
    model.set_logger(Logger(folder=None, output_formats=[]))  # as bird does: no /tmp/SB3-<time> folder
    model.learn(job.env_steps)
    env = adapter.make_env()
    obs, _ = env.reset(seed=job.seed)
    done = False
    while not done:
        action = model.predict(vecnorm.normalize_obs(obs[None]), deterministic=True)[0][0]
        obs, _, terminated, truncated, _ = env.step(action)
        done = terminated or truncated
    env.close()
    venv.close()
    return model.num_timesteps


def bird_training(job: TrainJob) -> int:
    """bird's learner through the executors' entry point (`call_learner`), in this process."""
    result = call_learner(job.train.learner, [job], lambda *_: None)[0]
    if not result.ok:
        raise RuntimeError(f"bird's training failed: {result.failure}")
    return result.env_steps


def sandbox_costs(job: TrainJob, repeats: int, calls_per_start: int = 4) -> tuple[float, float, int]:
    """Median worker start-up (interpreter, numpy, OS layers, program load) and median call for one rollout."""
    spec = make_adapter(job.env).spec
    rows = job.n_steps * job.n_envs
    obs = np.random.default_rng(0).normal(size=(rows, spec.obs_index.dim))
    act = np.zeros((rows, spec.action_dim))
    starts, times = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        program = open_program(job.code, spec, job, job)
        starts.append(time.perf_counter() - t)
        try:
            for _ in range(calls_per_start):
                t = time.perf_counter()
                program(obs, act, obs)
                times.append(time.perf_counter() - t)
        finally:
            program.close()
    return statistics.median(starts), statistics.median(times), rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="mujoco/hopper")
    parser.add_argument("--steps", type=int, default=20_000, help="env steps per training")
    parser.add_argument("--n-envs", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3, help="interleaved raw / bird pairs (the medians compare)")
    parser.add_argument("--sandbox-repeats", type=int, default=5, help="reward-worker start-ups timed")
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory(prefix="bird-bench-") as tmp:
        job = _job(args, 1, 1, Path(tmp) / "train")
        full_job = _job(args, 4, 4, Path(tmp) / "full")
        warm = _job(args, 1, 1, Path(tmp) / "warm", steps=16 * args.n_envs)
        raw_sb3(warm), bird_training(warm)  # untimed: first-call costs (imports, torch set-up) hit neither side
        load_before = os.getloadavg()
        started = record.begin()
        runs: dict[str, list[tuple[float, float, int]]] = {"raw": [], "bird": []}
        for _ in range(args.repeats):  # interleaved so machine noise hits both alike
            runs["raw"].append(measured(raw_sb3, job))
            runs["bird"].append(measured(bird_training, job))
        start_s, call_s, rows = sandbox_costs(job, args.sandbox_repeats)
        full_s, _, _ = measured(bird_training, full_job)
    trained = {steps for side in runs.values() for _, _, steps in side}
    if len(trained) != 1:
        raise RuntimeError(f"raw SB3 and bird trained different numbers of env steps: {sorted(trained)}")
    steps = trained.pop()  # SB3 finishes its last rollout: a multiple of n_steps x n_envs, >= --steps
    wall = {side: statistics.median(w for w, _, _ in rs) for side, rs in runs.items()}
    cpu = {side: statistics.median(c for _, c, _ in rs) for side, rs in runs.items()}
    r = wall["raw"]
    print(f"env {args.env}, {steps:,} steps trained (--steps {args.steps:,}), n_envs {args.n_envs}, n_steps "
          f"{job.n_steps}, repeats {args.repeats}; load average {load_before[0]:.1f} before, "
          f"{os.getloadavg()[0]:.1f} after ({os.cpu_count()} cores)")
    for side, label in (("raw", "raw SB3 PPO (reference reward)  "), ("bird", "bird training (sandboxed reward)")):
        print(f"{label} median {wall[side]:7.2f} s   {steps / wall[side]:7.0f} steps/s   CPU {cpu[side]:7.2f} s   "
              f"runs (wall, CPU) {[(round(w, 2), round(c, 2)) for w, c, _ in runs[side]]}")
    print(f"overhead ratio bird/raw = {wall['bird'] / r:.3f} (wall), {cpu['bird'] / cpu['raw']:.3f} (CPU)")
    print(f"sandbox: worker start-up {start_s * 1e3:.0f} ms (once per training), one call on a {rows:,}-row "
          f"rollout {call_s * 1e3:.1f} ms (median)")
    print(f"bird training with {full_job.n_checkpoints} checkpoint evaluations ({full_job.eval_episodes} episodes "
          f"each): {full_s:.2f} s (ratio {full_s / r:.3f}; the extra evaluation is work raw SB3 does not do)")
    row = {"env": args.env, "steps": steps, "n_envs": args.n_envs, "repeats": args.repeats, "raw_wall_s": wall["raw"],
           "bird_wall_s": wall["bird"], "raw_cpu_s": cpu["raw"], "bird_cpu_s": cpu["bird"],
           "raw_steps_per_s": steps / wall["raw"], "bird_steps_per_s": steps / wall["bird"],
           "ratio": wall["bird"] / r, "ratio_cpu": cpu["bird"] / cpu["raw"], "worker_start_ms": start_s * 1e3,
           "call_ms": call_s * 1e3, "with_evaluations_s": full_s}
    print(f"row appended to {record.append('overhead', row, started)}")


if __name__ == "__main__":
    main()
