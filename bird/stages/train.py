"""Train: one policy per live candidate, in parallel worker processes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bird.config.schema import BirdConfig
from bird.learners.job import TrainJob
from bird.pool import TrainPool
from bird.state import SearchState
from bird.types import Candidate, TrainResult

__all__ = ["train", "make_job"]


def make_job(cfg: BirdConfig, cid: str, code: str | None, seed: int, env_steps: int, out_dir: Path) -> TrainJob:
    return TrainJob(
        candidate_id=cid, code=code, env=cfg.env, train=cfg.train, seed=seed, env_steps=env_steps,
        n_envs=cfg.budget.n_envs, n_checkpoints=cfg.budget.n_checkpoints, eval_episodes=cfg.budget.eval_episodes,
        call_timeout_s=cfg.verify.call_timeout_s, memory_mb=cfg.verify.memory_mb, out_dir=str(out_dir),
        save_policy=cfg.run.save_policies,
    )


def train(cfg: BirdConfig, state: SearchState, cands: list[Candidate], pool: TrainPool,
          cand_dir: Callable[[str], Path]) -> dict[str, TrainResult]:
    """Train the candidates that passed verification; a failed training is recorded on the candidate."""
    live = [c for c in cands if c.alive]
    code_of = (lambda c: None) if cfg.train.reward_source == "reference" else (lambda c: c.code)
    jobs = [make_job(cfg, c.id, code_of(c), state.seed, state.plan.env_steps, cand_dir(c.id)) for c in live]
    results = pool.run(cfg.train.learner, jobs)
    for cand, res in zip(live, results, strict=True):
        state.env_steps += res.env_steps
        if res.failure is not None:
            cand.failure = res.failure
    return {r.candidate_id: r for r in results}
