"""Train: one policy per live candidate, on the configured executor (local worker processes or Ray)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bird.config.schema import BirdConfig
from bird.executors import Executor
from bird.learners.job import TrainJob
from bird.learners.video import VideoSpec, video_spec
from bird.registry import get
from bird.state import SearchState
from bird.types import Candidate, Failure, FailureKind, TrainResult

__all__ = ["train", "make_job", "learner_trains"]


def make_job(cfg: BirdConfig, cid: str, code: str | None, seed: int, env_steps: int, out_dir: Path,
             collect_episodes: int = 0, video: VideoSpec | None = None) -> TrainJob:
    return TrainJob(
        candidate_id=cid, code=code, env=cfg.env, train=cfg.train, seed=seed, env_steps=env_steps,
        n_envs=cfg.train.n_envs or cfg.budget.n_envs, n_checkpoints=cfg.budget.n_checkpoints,
        eval_episodes=cfg.budget.eval_episodes,
        call_timeout_s=cfg.verify.call_timeout_s, memory_mb=cfg.verify.memory_mb, out_dir=str(out_dir),
        save_policy=cfg.run.save_policies, contract=cfg.reward.contract, collect_episodes=collect_episodes,
        reward_form=cfg.reward.form, success_bonus=cfg.reward.success_bonus, video=video,
        language=cfg.reward.language or "numpy",
    )


def learner_trains(name: str) -> bool:
    """False for a learner that trains no policy (`none`): its jobs never go to the pool."""
    return getattr(get("learner", name), "trains", True)


def _within_budget(cfg: BirdConfig, state: SearchState, live: list[Candidate]) -> list[Candidate]:
    """The candidates budget.max_policy_trainings still allows (in index order); the rest are recorded as skipped.
    Counts the trainings; when none are left the search stops after this iteration."""
    from bird.components.schedule import remaining_trainings

    if not learner_trains(cfg.train.learner):
        return live
    left = remaining_trainings(cfg, state.policy_trainings)
    if left is not None:
        cap = f"budget.max_policy_trainings={cfg.budget.max_policy_trainings} reached"
        for cand in live[left:]:
            cand.failure = Failure(FailureKind.SKIPPED, cap)
        live = live[:left]
        if left - len(live) == 0:
            state.stop_reason = cap
    state.policy_trainings += len(live)
    return live


def train(cfg: BirdConfig, state: SearchState, cands: list[Candidate], pool: Executor,
          cand_dir: Callable[[str], Path]) -> dict[str, TrainResult]:
    """Train the candidates that passed verification; a failed training is recorded on the candidate.

    Rollouts collected after training (train.collect_episodes) go to the trajectory store."""
    live = _within_budget(cfg, state, [c for c in cands if c.alive])
    code_of = (lambda c: None) if cfg.train.reward_source == "reference" else (lambda c: c.code)
    from bird.components.roles import collect_episodes

    jobs = [make_job(cfg, c.id, code_of(c), state.seed, state.plan.env_steps, cand_dir(c.id),
                     collect_episodes(cfg), video_spec(cfg, "candidate", state.iteration, c.id)) for c in live]
    if learner_trains(cfg.train.learner):
        results = pool.run(cfg.train.learner, jobs)
    else:
        results = [get("learner", cfg.train.learner)(job) for job in jobs]
    for cand, res in zip(live, results, strict=True):
        state.env_steps += res.env_steps
        if res.failure is not None:
            cand.failure = res.failure
        elif res.rollouts_path:
            from bird.components.trajectories import add_rollouts

            add_rollouts(state, cand.id, res.rollouts_path, cfg.verify.tpe_success_score)
    return {r.candidate_id: r for r in results}
