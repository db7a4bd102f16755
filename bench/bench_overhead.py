"""Harness overhead: bird's training (sandboxed reward program, rollout relabelling) vs raw SB3 PPO on the
reference reward, side by side in one run, interleaved, same env / steps / hyper-parameters.

    python bench/bench_overhead.py [--env mujoco/hopper] [--steps 20000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from bird.config.schema import EnvConfig, TrainConfig
from bird.envs.registry import make_adapter
from bird.learners.job import TrainJob
from bird.learners.sb3_ppo import _BirdCallback, _build, train_ppo
from bird.reward.sandbox import SandboxedReward

PROGRAM = """import numpy as np

def compute_reward(obs, action, next_obs, info):
    forward = next_obs["rootx_vel"]
    alive = np.ones(len(action))
    ctrl = -1e-3 * np.sum(np.square(action), axis=-1)
    return forward + alive + ctrl, {"forward": forward, "alive": alive, "ctrl": ctrl}
"""


def _ppo_kwargs(job: TrainJob) -> dict:
    t = job.train
    return dict(seed=job.seed, device="cpu", verbose=0, learning_rate=t.learning_rate, n_steps=job.n_steps,
                batch_size=job.batch_size, n_epochs=t.n_epochs, gamma=t.gamma, gae_lambda=t.gae_lambda,
                ent_coef=t.ent_coef, clip_range=t.clip_range, policy_kwargs={"net_arch": list(t.net_arch)})


def raw_sb3(job: TrainJob) -> float:
    """Plain SB3: the env's own reward, VecNormalize for obs and reward, no harness."""
    adapter = make_adapter(job.env)
    venv = DummyVecEnv([lambda: adapter.make_env() for _ in range(job.n_envs)])
    venv.seed(job.seed)
    model = PPO("MlpPolicy", VecNormalize(venv, gamma=job.train.gamma), **_ppo_kwargs(job))
    start = time.perf_counter()
    model.learn(job.env_steps)
    return time.perf_counter() - start


def bird_training(job: TrainJob) -> float:
    """bird's training path without evaluations: recorder, sandboxed program, relabel, return scaling."""
    reward = SandboxedReward(job.code, make_adapter(job.env).spec.obs_index)
    _, recorder, _, model = _build(job)
    cb = _BirdCallback(job, recorder, reward, evaluate=lambda: None, progress=None)
    cb.pending = []  # no checkpoints: time the training alone
    start = time.perf_counter()
    model.learn(job.env_steps, callback=cb)
    elapsed = time.perf_counter() - start
    reward.close()
    assert cb.failure is None, cb.failure
    return elapsed


def sandbox_costs(job: TrainJob, repeats: int = 5, calls: int = 20) -> tuple[float, float, int]:
    """Median worker start-up (interpreter, numpy, OS layers, program load) and median call for one rollout."""
    import numpy as np

    index = make_adapter(job.env).spec.obs_index
    rows = job.n_steps * job.n_envs
    obs = np.random.default_rng(0).normal(size=(rows, index.dim))
    act = np.zeros((rows, 3))
    starts, times = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        program = SandboxedReward(job.code, index)
        starts.append(time.perf_counter() - t)
        for _ in range(calls // repeats):
            t = time.perf_counter()
            program(obs, act, obs)
            times.append(time.perf_counter() - t)
        program.close()
    return statistics.median(starts), statistics.median(times), rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="mujoco/hopper")
    parser.add_argument("--steps", type=int, default=20_000)
    parser.add_argument("--n-envs", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    job = TrainJob("bench", PROGRAM, EnvConfig(id=args.env, description="bench"), TrainConfig(), 0, args.steps,
                   args.n_envs, 4, 4, 5.0, 2048, "/tmp/bird-bench")
    load_before = os.getloadavg()
    raw, ours = [], []
    for _ in range(args.repeats):  # interleaved so machine noise hits both alike
        raw.append(raw_sb3(job))
        ours.append(bird_training(job))
    start_s, call_s, rows = sandbox_costs(job)
    start = time.perf_counter()
    full = train_ppo(job)
    full_s = time.perf_counter() - start
    r, o = statistics.median(raw), statistics.median(ours)
    print(f"env {args.env}, {args.steps:,} steps, n_envs {args.n_envs}, n_steps {job.n_steps}, repeats {args.repeats}; "
          f"load average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after ({os.cpu_count()} cores)")
    print(f"raw SB3 PPO (reference reward)   median {r:7.2f} s   {args.steps / r:7.0f} steps/s   runs {raw}")
    print(f"bird training (sandboxed reward) median {o:7.2f} s   {args.steps / o:7.0f} steps/s   runs {ours}")
    print(f"overhead ratio bird/raw = {o / r:.3f}")
    print(f"sandbox: worker start-up {start_s * 1e3:.0f} ms (once per training), one call on a {rows:,}-row "
          f"rollout {call_s * 1e3:.1f} ms (median)")
    print(f"bird training with {job.n_checkpoints} checkpoint evaluations ({job.eval_episodes} episodes each): "
          f"{full_s:.2f} s (ratio {full_s / r:.3f}; evaluation is extra work raw SB3 does not do)")
    assert full.ok


if __name__ == "__main__":
    main()
