"""Jobs for learners that take reward programs exported (train.learner=jax_ppo): each program is traced to StableHLO
in a sandbox worker and the job's source is replaced by the ExportedReward, so the trainer never receives source."""

from __future__ import annotations

import hashlib
from dataclasses import replace

from bird.learners.job import TrainJob
from bird.types import Failure, FailureKind

__all__ = ["export_jobs"]


def _export(job: TrainJob) -> object:
    """The job's program as an ExportedReward, or the Failure that stopped it."""
    from bird.envs.registry import make_adapter
    from bird.reward.factory import open_program
    from bird.reward.sandbox import RewardProgramError

    spec = make_adapter(job.env).spec
    try:
        with open_program(job.code or "", spec, job, job, language="jax", bulk=True) as program:
            return program.export()
    except RewardProgramError as exc:
        return exc.failure


def export_jobs(jobs: list[TrainJob]) -> tuple[list[TrainJob], dict[int, Failure]]:
    """(jobs with `program` set and `code` None, {job index: Failure} for programs that could not be exported).

    A program shared by several jobs (the final retrain's seeds) is exported once."""
    done: dict[str, object] = {}
    out, failures = [], {}
    for i, job in enumerate(jobs):
        if job.code is None:
            out.append(job)
            continue
        if job.language != "jax":
            failures[i] = Failure(FailureKind.TRAIN_ERROR, f"the learner needs reward.language=jax programs, got "
                                  f"{job.language}")
            out.append(job)
            continue
        key = hashlib.sha256(job.code.encode()).hexdigest()
        if key not in done:
            done[key] = _export(job)
        result = done[key]
        if isinstance(result, Failure):
            failures[i] = result
            out.append(job)
        else:
            out.append(replace(job, code=None, program=result))
    return out, failures
