"""A training job (picklable, sent to a worker process), its checkpoint schedule, and how the loop builds one."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bird.config.schema import BirdConfig, EnvConfig, TrainConfig
from bird.registry import get

__all__ = ["TrainJob", "VideoSpec", "EVAL_SEED_BASE", "ROLLOUT_SEED_BASE", "make_job", "learner_trains", "loop_learner",
           "final_learner", "video_spec"]

EVAL_SEED_BASE = 1_000_000  # eval seeds are the same for every candidate and checkpoint (paired comparisons)
ROLLOUT_SEED_BASE = 2_000_000  # never the eval seeds nor the training seeds


@dataclass(frozen=True)
class VideoSpec:
    """What to film (picklable: it travels to the worker inside a TrainJob)."""

    episodes: int = 1
    width: int = 320
    height: int = 240
    frame_skip: int = 2
    shadows: bool = False
    caption: bool = False
    meta: dict[str, Any] = field(default_factory=dict)  # method, env, task text, candidate id: copied into each JSON


def video_spec(cfg: BirdConfig, phase: str, iteration: int = 0, candidate_id: str | None = None) -> VideoSpec | None:
    """The VideoSpec for a training of `phase` ("final" or "candidate"), or None when video.record says no.

    none: nothing; returned: the final retrain's seeds; all_candidates: those and every trained candidate of each
    `video.every`-th iteration (and of the last).
    """
    v = cfg.video
    wanted = {"none": (), "returned": ("final",), "all_candidates": ("final", "candidate")}[v.record]
    if phase not in wanted:
        return None
    if phase == "candidate":
        last = min(cfg.loop.iterations, cfg.budget.max_iterations or cfg.loop.iterations)
        if iteration % v.every and iteration != last:
            return None
    meta = {"method": cfg.method, "env": cfg.env.id, "description": cfg.env.description, "phase": phase,
            "candidate_id": candidate_id, "search_seed": cfg.seed}
    return VideoSpec(v.episodes, v.width, v.height, v.frame_skip, v.shadows, v.caption, meta)


@dataclass(frozen=True)
class TrainJob:
    candidate_id: str
    code: str | None  # None (and no program) = train on the reference reward
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
    language: str = "numpy"  # reward.language of `code`
    program: Any = None  # ExportedReward (bird/reward/jax_export.py): the only form of the program a jax learner gets
    plugins: tuple[str, ...] = ()  # the config's plugins: a worker imports them before it trains (bird/plugins.py)

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


def make_job(cfg: BirdConfig, cid: str, code: str | None, seed: int, env_steps: int, out_dir: Path,
             collect_episodes: int = 0, video: VideoSpec | None = None) -> TrainJob:
    """The job of one training of candidate `cid` (code None: the reference reward) under `cfg`."""
    return TrainJob(
        candidate_id=cid, code=code, env=cfg.env, train=cfg.train, seed=seed, env_steps=env_steps,
        n_envs=cfg.train.n_envs or cfg.budget.n_envs, n_checkpoints=cfg.budget.n_checkpoints,
        eval_episodes=cfg.budget.eval_episodes,
        call_timeout_s=cfg.verify.call_timeout_s, memory_mb=cfg.verify.memory_mb, out_dir=str(out_dir),
        save_policy=cfg.run.save_policies, contract=cfg.reward.contract, collect_episodes=collect_episodes,
        reward_form=cfg.reward.form, success_bonus=cfg.reward.success_bonus, video=video,
        language=cfg.reward.language or "numpy", plugins=tuple(cfg.plugins),
    )


def learner_trains(name: str) -> bool:
    """False for a learner that trains no policy (`none`): its jobs never go to an executor."""
    return bool(get("learner", name).trains)


def loop_learner(cfg: BirdConfig) -> str:
    """The learner of the loop's trainings: train.learner, or `none` when nothing the loop ranks, reports or shows
    reads a policy (bird/config/needs.py reads_policy; GRACE's demo fitness: its train.learner then trains only the
    final retrain and DataExpandRL)."""
    from bird.config.needs import reads_policy

    return cfg.train.learner if reads_policy(cfg) else "none"


def final_learner(cfg: BirdConfig) -> str:
    """The learner of the final retrain and of GRACE's DataExpandRL: final.learner, else train.learner. `none` (with
    a fitness that needs no policy) stops the search before any RL: GRACE's offline reward learning."""
    return cfg.final.learner or cfg.train.learner


def untrained_checkpoint(cfg: BirdConfig) -> str | None:
    """What the run should say at start when its first checkpoint comes before the learner's first policy update
    (budget=smoke with SB3 PPO): that checkpoint scores the untrained policy, the same for every reward, and a
    fitness aggregated over checkpoints (feedback.aggregate other than `final`) can then tie every candidate."""
    first_update = get("learner", loop_learner(cfg)).first_update
    n_envs = cfg.train.n_envs or cfg.budget.n_envs
    if first_update is None or cfg.feedback.aggregate == "final" or cfg.budget.n_checkpoints < 2:
        return None
    first, update = cfg.budget.env_steps // cfg.budget.n_checkpoints, first_update(cfg.train, n_envs)
    if first > update:
        return None
    return (f"budget={cfg.budget.name}: the first of {cfg.budget.n_checkpoints} checkpoints ({first:,} env steps) "
            f"comes before the first policy update ({update:,} steps: train.n_steps × {n_envs} envs), so it scores the "
            f"untrained policy, the same for every reward; with feedback.aggregate={cfg.feedback.aggregate} the "
            "fitness of every candidate may tie, and the tie rule then picks (docs/selection.md)")

