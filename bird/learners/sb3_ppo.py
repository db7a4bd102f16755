"""Stable-Baselines3 PPO on CPU: the learner hook. Relabelling, evaluation and checkpoints are shared modules."""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from bird.envs.registry import make_adapter
from bird.learners.checkpoints import CheckpointKeeper, needs_eval_own_return
from bird.learners.curves import write_curve
from bird.learners.evaluate import Evaluator
from bird.learners.grid_policy import policy_for
from bird.learners.job import TrainJob
from bird.learners.relabel import EpisodeStats, ReturnNormalizer, TransitionRecorder, label_transitions
from bird.learners.rollouts import collect_rollouts, save_rollouts
from bird.learners.sb3_policy import POLICY_NAME, save_policy
from bird.reward.factory import open_program
from bird.reward.isolation import harden_host
from bird.reward.sandbox import RewardProgramError, SandboxedReward
from bird.types import Checkpoint, Failure, FailureKind, TrainResult

__all__ = ["train_ppo"]

Progress = Callable[[str, int, int, float | None], None]


class _BirdCallback(BaseCallback):
    """Relabels each rollout with the candidate reward, then evaluates at the checkpoint thresholds."""

    def __init__(self, job: TrainJob, recorder: TransitionRecorder, reward: SandboxedReward | None,
                 evaluate: Callable[[], Checkpoint], progress: Progress | None, keeper: CheckpointKeeper) -> None:
        super().__init__()
        self.job, self.recorder, self.reward, self.evaluate, self.progress = job, recorder, reward, evaluate, progress
        self.keeper = keeper
        self.normalizer = ReturnNormalizer(job.n_envs, job.train.gamma) if job.train.normalize_reward else None
        self.stats = EpisodeStats(job.n_envs)
        self.pending = list(job.checkpoint_steps())
        self.curve: list[Checkpoint] = []
        self.failure: Failure | None = None
        self.stopped = False  # early stop on own reward (train.early_stop)
        self.started = time.monotonic()

    def _on_step(self) -> bool:
        if self.failure is not None or self.stopped:
            return False
        if self.job.train.timeout_s and time.monotonic() - self.started > self.job.train.timeout_s:
            self.failure = Failure(FailureKind.TIMEOUT, f"training exceeded train.timeout_s={self.job.train.timeout_s:g}")
            return False
        return True

    def _relabel(self) -> None:
        data = self.recorder.take()
        if self.reward is None:
            own, comps = data["ref_rewards"], {}
        else:
            own, comps = label_transitions(self.reward, data, self.job.reward_form, self.job.train.gamma,
                                           self.job.success_bonus)
        self.stats.add(own, data["ref_rewards"], data["dones"], comps)
        scaled = self.normalizer(own, data["dones"]) if self.normalizer else own
        buf = self.model.rollout_buffer
        buf.rewards += scaled.astype(np.float32)
        buf.compute_returns_and_advantage(last_values=self.locals["values"], dones=self.locals["dones"])

    def _on_rollout_end(self) -> None:
        if self.failure is not None:
            return
        try:
            self._relabel()
        except RewardProgramError as exc:
            self.failure = exc.failure
            return
        before = len(self.curve)
        while self.pending and self.num_timesteps >= self.pending[0] and not self.stopped:
            self.pending.pop(0)
            self.curve.append(self.evaluate())
            self.stopped = self.keeper.should_stop()
        if self.progress and len(self.curve) == before:  # steps only: no checkpoint was scored here
            self.progress(self.job.candidate_id, self.num_timesteps, self.job.env_steps, None)
        for ckpt in self.curve[before:]:
            self.report(ckpt)

    def report(self, ckpt: Checkpoint) -> None:
        """Progress for a scored checkpoint: its own steps with its own score."""
        if self.progress:
            self.progress(self.job.candidate_id, ckpt.env_steps, self.job.env_steps, ckpt.score)


def _labeller(job: TrainJob, reward: SandboxedReward | None) -> Callable[[dict[str, np.ndarray]], np.ndarray]:
    """The own reward of a recorded evaluation block (the reference reward for an oracle training)."""
    if reward is None:
        return lambda data: data["ref_rewards"]
    return lambda data: label_transitions(reward, data, job.reward_form, job.train.gamma, job.success_bonus,
                                          reset=True)[0]


def _snapshot(model: PPO, vecnorm: VecNormalize) -> tuple[dict, Any]:
    """A deep copy of what a greedy action depends on: the policy's parameters and the observation statistics."""
    return copy.deepcopy(model.policy.state_dict()), copy.deepcopy(vecnorm.obs_rms)


def _restore(model: PPO, vecnorm: VecNormalize, params: tuple[dict, Any]) -> None:
    model.policy.load_state_dict(params[0])
    vecnorm.obs_rms = copy.deepcopy(params[1])


def _prior(job: TrainJob, reward: SandboxedReward | None) -> Any:
    """The subtask prior (train.obs_augment) over the candidate's Ψ, or None."""
    from bird.registry import get

    table = get("obs_augment", job.train.obs_augment)(reward.plan_list if reward is not None else [])
    if table is None:
        return None
    if reward is None or not reward.plan_list:
        raise ValueError(f"train.obs_augment={job.train.obs_augment!r} needs a progress_program candidate")
    from bird.learners.augment import SubtaskPrior

    return SubtaskPrior(reward, table)


def _build(job: TrainJob, prior: Any = None) -> tuple[Any, TransitionRecorder, VecNormalize, PPO]:
    adapter = make_adapter(job.env)
    venv = DummyVecEnv([lambda: adapter.make_env() for _ in range(job.n_envs)])
    venv.seed(job.seed)
    recorder = TransitionRecorder(venv)
    outer: Any = recorder
    if prior is not None:
        from bird.learners.augment import PriorWrapper

        outer = PriorWrapper(recorder, prior)
    grid = policy_for(adapter.spec)  # a categorical grid (BabyAI): a small CNN over ids, never normalised
    vecnorm = VecNormalize(outer, norm_obs=job.train.normalize_obs and grid is None, norm_reward=False,
                           gamma=job.train.gamma)
    model = PPO(
        "MlpPolicy", vecnorm, seed=job.seed, device="cpu", verbose=0,
        learning_rate=job.train.learning_rate, n_steps=job.n_steps, batch_size=job.batch_size,
        n_epochs=job.train.n_epochs, gamma=job.train.gamma, gae_lambda=job.train.gae_lambda,
        ent_coef=job.train.ent_coef, clip_range=job.train.clip_range,
        policy_kwargs={"net_arch": list(job.train.net_arch), **(grid or {})},
    )
    model.set_logger(Logger(folder=None, output_formats=[]))  # SB3's default logger makes a /tmp/SB3-<time> folder
    return adapter, recorder, vecnorm, model


def train_ppo(job: TrainJob, progress: Progress | None = None) -> TrainResult:
    """Train one policy under the job's reward; evaluate the benchmark score at each checkpoint."""
    harden_host()  # a training process: its environment and memory unreadable by same-user processes
    torch.set_num_threads(1)
    start = time.monotonic()
    reward: SandboxedReward | None = None
    rollouts_path: str | None = None
    try:
        if job.code is not None:
            adapter_spec = make_adapter(job.env).spec
            reward = open_program(job.code, adapter_spec, job, job)
        prior = _prior(job, reward)
        adapter, recorder, vecnorm, model = _build(job, prior)
    except RewardProgramError as exc:
        return TrainResult(job.candidate_id, job.seed, (), 0, time.monotonic() - start, exc.failure)
    except ValueError as exc:
        return TrainResult(job.candidate_id, job.seed, (), 0, time.monotonic() - start,
                           Failure(FailureKind.TRAIN_ERROR, str(exc)[:500]))
    evaluator = Evaluator(adapter, job.eval_episodes, job.seed, job.train.eval_end_on_success)
    keeper = CheckpointKeeper(job.train)
    label = _labeller(job, reward) if needs_eval_own_return(job.train) else None

    def act(obs: np.ndarray) -> np.ndarray:
        seen = prior(obs) if prior is not None else obs
        return model.predict(vecnorm.normalize_obs(seen), deterministic=True)[0]

    def evaluate() -> Checkpoint:
        ev = evaluator(act, label)
        window = cb.stats.summary()
        ckpt = Checkpoint(model.num_timesteps, ev["score"], ev["quantity"], window["own_return"],
                          window["reference_return"], ev["episode_length"], window["components"],
                          ev.get("own_return", math.nan), ev["reference_return"])
        keeper.offer(ckpt, lambda: _snapshot(model, vecnorm))
        return ckpt

    cb = _BirdCallback(job, recorder, reward, evaluate, progress, keeper)
    shipped, choice = -1, {}
    videos: list[str] = []
    try:
        model.learn(total_timesteps=job.env_steps, callback=cb)
        if cb.failure is None and not cb.stopped:
            cb.curve.append(evaluate())
            cb.report(cb.curve[-1])
        if cb.failure is None:
            shipped, choice = keeper.ship(job.out_dir, lambda params: _restore(model, vecnorm, params))
        if cb.failure is None and job.video is not None:  # films the shipped policy
            from bird.learners.video import film_policy

            videos = film_policy(adapter, act, job.video, job.seed, job.out_dir, cb.curve[shipped].score)
        if cb.failure is None and job.collect_episodes:
            rollouts_path = str(Path(job.out_dir) / "rollouts.npz")
            save_rollouts(rollouts_path, collect_rollouts(adapter, act, job.collect_episodes, job.seed, reward,
                                                           job.train.eval_end_on_success))
    except RewardProgramError as exc:
        cb.failure = exc.failure
    except Exception as exc:  # noqa: BLE001 - a learner crash is recorded for this candidate, the search goes on
        cb.failure = Failure(FailureKind.TRAIN_ERROR, f"{type(exc).__name__}: {exc}"[:500])
    finally:
        evaluator.close()
        if reward is not None:
            reward.close()
    out = Path(job.out_dir)
    write_curve(out / "curve.csv", cb.curve)
    policy_path = None
    if job.save_policy and cb.failure is None:
        policy_path = str(out / POLICY_NAME)
        save_policy(model, vecnorm, Path(policy_path))
    return TrainResult(job.candidate_id, job.seed, tuple(cb.curve), int(model.num_timesteps),
                       time.monotonic() - start, cb.failure, policy_path, rollouts_path if cb.failure is None else None,
                       shipped, choice, tuple(videos))
