"""What a jax_ppo training leaves in its job's folder, written by the host from validated values: curve.csv,
jax_ppo.json (resolved settings, timing, program digest), checkpoint.json (which checkpoint was shipped and why,
recomputed here from the curve), policy.msgpack (run.save_policies) and rollouts.npz (train.collect_episodes).
One writer for the isolated trainer's results and the in-process path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from bird.files import write_bytes, write_json, write_text
from bird.learners.checkpoints import CheckpointKeeper
from bird.learners.curves import write_curve
from bird.learners.job import TrainJob
from bird.learners.rollouts import save_rollouts
from bird.types import Checkpoint, Failure, TrainResult

__all__ = ["choose_checkpoint", "write_result"]


def choose_checkpoint(job: TrainJob, curve: list[Checkpoint]) -> tuple[int, dict[str, Any]]:
    """(index of the checkpoint train.checkpoint_selection ships, its record) for a curve: what the trainer must
    have shipped, worked out again from the numbers alone."""
    keeper = CheckpointKeeper(job.train)
    for c in curve:
        keeper.offer(c, lambda: None)
    index, _, record = keeper.choose()
    return index, record


def write_result(job: TrainJob, curve: list[Checkpoint], env_steps: int, wall_s: float, failure: Failure | None,
                 summary: dict[str, Any], policy: bytes | None, rollouts: dict[str, np.ndarray] | None) -> TrainResult:
    """Write the job's files and return its TrainResult (checkpoint.json for a job that trained)."""
    out = Path(job.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_curve(out / "curve.csv", curve)
    record = {**summary, "program": job.program.digest if job.program is not None else None}
    write_text(out / "jax_ppo.json", json.dumps(record, indent=1) + "\n")
    policy_path = rollouts_path = None
    if policy is not None and failure is None:
        policy_path = str(out / "policy.msgpack")
        write_bytes(Path(policy_path), policy)
    if rollouts is not None and failure is None:
        rollouts_path = str(out / "rollouts.npz")
        save_rollouts(rollouts_path, rollouts)
    shipped, choice = -1, {}
    if failure is None and curve:
        shipped, choice = choose_checkpoint(job, curve)
        write_json(out / "checkpoint.json", choice)
    return TrainResult(job.candidate_id, job.seed, tuple(curve), env_steps, wall_s, failure, policy_path,
                       rollouts_path, shipped, choice)
