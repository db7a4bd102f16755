"""train.learner=jax_ppo as registered: every group of jobs trained by an isolated trainer process
(bird/learners/trainer_host.py), and one bad candidate fails only itself.

When a group's shared step fails after its reward programs arrived (the trainer crashed, hung past the watchdog,
or raised in the step all programs share), the culprit is not known: the group is split in halves and each half
is retrained in a fresh trainer, recursively, until the failing program is alone. Halves that train are kept; the
culprit gets the failure of the run it failed alone. Every retry keeps the group's width (the same compiled
program; each member's numbers depend only on its own seed and program), so the others' curves are those of a
group without the culprit.
"""

from __future__ import annotations

from collections.abc import Callable

from bird.learners.job import TrainJob
from bird.learners.trainer_host import Attempt, run_trainer
from bird.types import Failure, TrainResult

__all__ = ["train_isolated", "search_culprits"]

Progress = Callable[[str, int, int, float | None], None]
Runner = Callable[[list[TrainJob], int, Progress | None], Attempt]


def _failed(job: TrainJob, failure: Failure) -> TrainResult:
    return TrainResult(job.candidate_id, job.seed, (), 0, 0.0, failure)


def search_culprits(jobs: list[TrainJob], width: int, progress: Progress | None = None,
                    runner: Runner | None = None) -> dict[int, TrainResult]:
    """{index in jobs: result}: one run of the whole group, then halves of what failed, until the culprits
    stand alone. A failure before the programs arrived (start-up, compiling the training program) is every
    member's: retrying without a program would not change it."""
    runner = runner or run_trainer
    attempt = runner(jobs, width, progress)
    if attempt.group is None:
        return dict(enumerate(attempt.results))
    if not attempt.blame or len(jobs) == 1 or all(j.program is None for j in jobs):
        return {i: _failed(job, attempt.group) for i, job in enumerate(jobs)}
    half = len(jobs) // 2
    left = search_culprits(jobs[:half], width, progress, runner)
    right = search_culprits(jobs[half:], width, progress, runner)
    return {**left, **{half + i: r for i, r in right.items()}}


def train_isolated(jobs: list[TrainJob], progress: Progress | None = None) -> list[TrainResult]:
    """Every job, in job order; jobs that share a task and budget are trained together (jax_ppo.group_key)."""
    from bird.learners.jax_ppo import group_key

    groups: dict[str, list[int]] = {}
    for i, job in enumerate(jobs):
        groups.setdefault(group_key(job), []).append(i)
    results: dict[int, TrainResult] = {}
    for idx in groups.values():
        found = search_culprits([jobs[i] for i in idx], len(idx), progress)
        results.update({idx[k]: r for k, r in found.items()})
    return [results[i] for i in range(len(jobs))]
