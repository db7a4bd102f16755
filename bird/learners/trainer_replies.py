"""Reading what the JAX trainer sends back (bird/learners/trainer_host.py asks, these read): total functions from
any JSON value (and payload bytes) to validated values, or a RewardProgramError carrying a `bad_output` Failure.
Curves at the step counts the host expects with exactly the job's components; failures only for jobs of the group,
with known kinds; policies and rollouts only for jobs that asked, with known names, dtypes and shapes, sizes that
add up exactly."""

from __future__ import annotations

from typing import Any

import numpy as np

from bird.learners.job import TrainJob
from bird.reward import replies
from bird.reward.protocol import clean_text
from bird.types import Checkpoint, Failure

__all__ = ["job_failures", "read_checkpoint", "read_outputs", "read_timing", "MAX_POLICY_BYTES"]

MAX_POLICY_BYTES = 64 * 2**20
_JOB_KINDS = frozenset({"non_finite", "timeout", "bad_output", "rejected", "runtime_error", "train_error"})


def job_failures(value: Any, n_jobs: int) -> dict[int, Failure]:
    """{job index: Failure} from {"<index>": {kind, reason, detail}}: indices in the group, known kinds only."""
    if not isinstance(value, dict) or len(value) > n_jobs:
        raise replies.bad("failures must map job indices to failure records")
    out = {}
    for key, rec in value.items():
        if not (isinstance(key, str) and key.isascii() and key.isdigit() and int(key) < n_jobs):
            raise replies.bad(f"a failure for job {clean_text(key, 20)!r}, not in the group")
        if not isinstance(rec, dict):
            raise replies.bad("a failure record that is not an object")
        out[int(key)] = replies.failure_from(rec, _JOB_KINDS)
    return out


def read_timing(value: Any) -> dict[str, float]:
    if not isinstance(value, dict) or len(value) > 16:
        raise replies.bad("timing must be an object of at most 16 numbers")
    return {clean_text(k, 40): replies.number(v, "a timing", 0.0, 1e12) for k, v in value.items()}


_CHECKPOINT_FIELDS = {"env_steps", "score", "quantity", "own_return", "reference_return", "episode_length",
                      "components", "eval_own_return", "eval_reference_return"}


def read_checkpoint(value: Any, job: TrainJob, steps: int) -> Checkpoint:
    """A checkpoint as the trainer sent it: exactly the known fields, at the step count the host expects,
    numbers finite (NaN only for the returns of a window without a finished episode), the job's own components."""
    if not isinstance(value, dict) or set(value) != _CHECKPOINT_FIELDS:
        raise replies.bad("a checkpoint with missing or unknown fields")
    replies.integer(value["env_steps"], "env_steps", steps, steps)  # at the step count the host expects
    comps = value["components"]
    names = job.program.components if job.program is not None else ()
    if not isinstance(comps, dict) or tuple(comps) != names:
        raise replies.bad(f"checkpoint components {clean_text(list(comps)[:8] if isinstance(comps, dict) else comps, 200)}"
                          f" instead of {list(names)}")
    num = replies.number
    return Checkpoint(steps, num(value["score"], "score"), num(value["quantity"], "quantity"),
                      num(value["own_return"], "own_return", nan=True),
                      num(value["reference_return"], "reference_return", nan=True),
                      num(value["episode_length"], "episode_length", 0.0, 1e9),
                      {n: num(v, f"component {n}", nan=True) for n, v in comps.items()},
                      num(value["eval_own_return"], "eval_own_return", nan=True),
                      num(value["eval_reference_return"], "eval_reference_return", nan=True))


_ROLLOUT_1D = {"episode": "<i8", "reward": "<f8", "score": "<f8", "quantity": "<f8", "length": "<i8"}
_ROLLOUT_2D = ("obs", "actions", "next_obs")


def read_outputs(frame: dict[str, Any], data: bytes, job: TrainJob) -> tuple[bytes | None, dict[str, np.ndarray] | None]:
    """(policy bytes or None, rollouts arrays or None) of one job, every size and name checked before use."""
    size = replies.integer(frame.get("policy"), "policy size", 0, MAX_POLICY_BYTES)
    if (size > 0) != job.save_policy:
        raise replies.bad("a policy the job did not ask for, or none where it did")
    spec = frame.get("arrays")
    if not isinstance(spec, list) or len(spec) > 16 + len(job.program.components if job.program else ()):
        raise replies.bad("rollout arrays must be a short list")
    if bool(spec) != bool(job.collect_episodes):
        raise replies.bad("rollouts the job did not ask for, or none where it did")
    arrays, at = {}, size
    comps = {f"comp/{c}" for c in (job.program.components if job.program else ())}
    for entry in spec:
        if not (isinstance(entry, list) and len(entry) == 3 and isinstance(entry[0], str)
                and entry[1] in ("<f8", "<i8") and isinstance(entry[2], list) and 1 <= len(entry[2]) <= 2):
            raise replies.bad("a rollout array entry that is not [name, dtype, shape]")
        name, dtype, shape = entry[0], entry[1], [replies.integer(d, "a dimension", 0, 1 << 30) for d in entry[2]]
        if name in arrays or not (name in _ROLLOUT_2D or name in _ROLLOUT_1D or name in comps):
            raise replies.bad(f"an unexpected rollout array {clean_text(name, 80)!r}")
        want = _ROLLOUT_1D.get(name, "<f8")
        if dtype != want or (len(shape) == 2) != (name in _ROLLOUT_2D):
            raise replies.bad(f"rollout array {name} has dtype {dtype} and {len(shape)} dimensions")
        n = int(np.prod(shape)) * 8
        if at + n > len(data):
            raise replies.bad("rollout arrays larger than the bytes sent")
        arrays[name] = np.frombuffer(data[at:at + n], dtype=dtype).reshape(shape).copy()
        at += n
    if at != len(data):
        raise replies.bad("bytes left over after the outputs")
    rollouts = _check_rollouts(arrays, job, comps) if spec else None
    return (data[:size] if size else None), rollouts


def _check_rollouts(arrays: dict[str, np.ndarray], job: TrainJob, comps: set[str]) -> dict[str, np.ndarray]:
    missing = (set(_ROLLOUT_2D) | set(_ROLLOUT_1D) | comps) - set(arrays)
    if missing:
        raise replies.bad(f"rollouts without {sorted(missing)}")
    n, e = len(arrays["obs"]), job.collect_episodes
    # a reference-reward job has no program to give the widths: its next observations are as wide as its observations
    dims = {"next_obs": arrays["obs"].shape[1]}
    if job.program is not None:
        dims = {"obs": job.program.obs_dim, "next_obs": job.program.obs_dim, "actions": job.program.act_dim}
    for name, a in arrays.items():
        rows = e if name in ("score", "quantity", "length") else n
        if len(a) != rows or (a.ndim == 2 and name in dims and a.shape[1] != dims[name]):
            raise replies.bad(f"rollout array {name} has shape {a.shape}")
    if n > e * (job.env.horizon + 1) or (len(arrays["episode"]) and not (arrays["episode"].min() >= 0
                                                                          and arrays["episode"].max() < e)):
        raise replies.bad("rollouts longer than the episodes asked for, or episodes out of range")
    return arrays
