"""Jobs for learners that take reward programs exported (train.learner=jax_ppo): each program is traced to StableHLO
in a sandbox worker for exactly the training rollout's rows, dry-run once at that size there (loops and sorts that
only bite at size fail as that program's failure), then inspected in a throwaway isolated process
(bird/reward/inspector.py); the job's source is replaced by the ExportedReward, so the trainer never receives
source and receives only artefacts that passed every check."""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from bird.learners.job import TrainJob
from bird.types import Failure, FailureKind

__all__ = ["export_jobs", "training_rows"]


def training_rows(job: TrainJob, task: str) -> int:
    """Rows of one training slot's rollout (decisions per update × envs): the size every artefact is exported for."""
    from bird.learners.jax_settings import resolve_settings

    s = resolve_settings(job.train.jax, task, job.env_steps, job.train.normalize_reward)
    return s.decisions_per_update * s.num_envs


def _export(job: TrainJob, spec: Any, rows: int) -> object:
    """The job's program as an inspected ExportedReward for `rows` rows, or the Failure that stopped it."""
    from bird.reward.factory import BULK_TIMEOUT_S, open_program
    from bird.reward.inspector import inspect_artefact
    from bird.reward.sandbox import RewardProgramError

    try:
        with open_program(job.code or "", spec, job, job, language="jax", bulk=True) as program:
            exported = program.export(rows, max(job.call_timeout_s, BULK_TIMEOUT_S))
    except RewardProgramError as exc:
        return exc.failure
    return inspect_artefact(exported) or exported


def export_jobs(jobs: list[TrainJob]) -> tuple[list[TrainJob], dict[int, Failure]]:
    """(jobs with `program` set and `code` None, {job index: Failure} for programs that could not be exported).

    A program shared by several jobs of one size (the final retrain's seeds) is exported once; distinct programs
    are exported and inspected side by side (each in processes of its own), as many at once as there are cores."""
    from bird.envs.registry import make_adapter

    failures: dict[int, Failure] = {}
    adapters: dict[str, Any] = {}  # built here, in this thread: building one is not thread-safe
    keys: dict[int, tuple[str, int]] = {}
    tasks: dict[tuple[str, int], tuple[TrainJob, Any, int]] = {}
    for i, job in enumerate(jobs):
        if job.code is None:
            continue
        if job.language != "jax":
            failures[i] = Failure(FailureKind.TRAIN_ERROR, f"the learner needs reward.language=jax programs, got "
                                  f"{job.language}")
            continue
        if repr(job.env) not in adapters:
            adapters[repr(job.env)] = make_adapter(job.env)
        adapter = adapters[repr(job.env)]
        rows = training_rows(job, adapter.task)
        keys[i] = (hashlib.sha256(job.code.encode()).hexdigest(), rows)
        tasks.setdefault(keys[i], (job, adapter.spec, rows))
    with ThreadPoolExecutor(max_workers=max(1, min(len(tasks), os.cpu_count() or 1)),
                            thread_name_prefix="export") as pool:
        done = dict(zip(tasks, pool.map(lambda t: _export(*t), tasks.values()), strict=True))
    out = []
    for i, job in enumerate(jobs):
        result = done.get(keys[i]) if i in keys else None
        if isinstance(result, Failure):
            failures[i] = result
        if result is None or isinstance(result, Failure):
            out.append(job)
        else:
            out.append(replace(job, code=None, program=result))
    return out, failures
