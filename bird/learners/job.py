"""A training job (picklable, sent to a worker process) and the checkpoint schedule derived from it."""

from __future__ import annotations

from dataclasses import dataclass

from bird.config.schema import EnvConfig, TrainConfig
from bird.learners.video import VideoSpec

__all__ = ["TrainJob"]


@dataclass(frozen=True)
class TrainJob:
    candidate_id: str
    code: str | None  # None = train on the reference reward
    env: EnvConfig
    train: TrainConfig
    seed: int
    env_steps: int
    n_envs: int
    n_checkpoints: int
    eval_episodes: int
    call_timeout_s: float
    memory_mb: int
    out_dir: str  # where curve.csv (and the policy) go
    save_policy: bool = False
    contract: str = "compute_reward"  # reward-program contract (registry family contract)
    collect_episodes: int = 0  # deterministic episodes of the trained policy saved as rollouts.npz
    reward_form: str = "direct"  # registry family reward_form (harness-side shaping of the program's output)
    success_bonus: float = 1.0  # r_bonus of reward forms that add the env's success indicator
    video: VideoSpec | None = None  # film the trained policy's evaluation episodes (bird/learners/video.py)

    @property
    def n_steps(self) -> int:
        """Rollout length per env: the trainer's n_steps, capped so there are >= n_checkpoints rollouts."""
        cap = max(8, self.env_steps // (self.n_envs * self.n_checkpoints))
        return min(self.train.n_steps, cap)

    @property
    def batch_size(self) -> int:
        return min(self.train.batch_size, self.n_steps * self.n_envs)

    def checkpoint_steps(self) -> list[int]:
        """Env-step thresholds of the in-training checkpoints (the last one is taken after training)."""
        return [self.env_steps * k // self.n_checkpoints for k in range(1, self.n_checkpoints)]
