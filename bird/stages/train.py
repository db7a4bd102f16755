"""Train: one policy per live candidate, on the configured executor (local worker processes or Ray)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from bird.components.schedule import remaining_trainings
from bird.components.trajectories import add_rollouts
from bird.config.needs import collect_episodes
from bird.config.schema import BirdConfig
from bird.executors import Executor
from bird.learners.job import learner_trains, loop_learner, make_job, video_spec
from bird.registry import get
from bird.state import SearchState
from bird.types import Candidate, Failure, FailureKind, TrainResult

__all__ = ["train"]


def _within_budget(cfg: BirdConfig, state: SearchState, live: list[Candidate]) -> list[Candidate]:
    """The candidates budget.max_policy_trainings still allows (in index order); the rest are recorded as skipped.
    Counts the trainings; when none are left the search stops after this iteration."""
    if not learner_trains(loop_learner(cfg)):
        return live
    left = remaining_trainings(cfg.budget, state.policy_trainings)
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
    jobs = [make_job(cfg, c.id, code_of(c), state.seed, state.plan.env_steps, cand_dir(c.id),
                     collect_episodes(cfg), video_spec(cfg, "candidate", state.iteration, c.id)) for c in live]
    learner = loop_learner(cfg)
    if learner_trains(learner):
        results = pool.run(learner, jobs)
    else:
        results = [get("learner", learner)(job) for job in jobs]
    for cand, res in zip(live, results, strict=True):
        state.env_steps += res.env_steps
        if res.failure is not None:
            cand.failure = res.failure
        elif res.rollouts_path:
            add_rollouts(state, cand.id, res.rollouts_path, cfg.verify.tpe_success_score)
    return {r.candidate_id: r for r in results}
