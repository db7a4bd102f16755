"""What a jax_ppo training leaves in its job's folder (bird/learners/jax_outputs.py), written by the host from values it
validated: which files a trained, a failed and a reference-reward job get, and which checkpoint is recorded as
shipped (worked out again from the curve)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from bird.learners.jax_outputs import choose_checkpoint, write_result
from bird.learners.rollouts import load_rollouts
from bird.reward.jax_export import ExportedReward
from bird.types import Checkpoint, Failure, FailureKind

PROGRAM = ExportedReward(b"\1" * 64, ("forward",), 11, 3, 32)
FAILED = Failure(FailureKind.NON_FINITE, "NaN in update 2")


def _ckpt(steps: int, own: float) -> Checkpoint:
    return Checkpoint(steps, own / 10, own, own, 0.0, 100.0, {"forward": own / 2}, eval_own_return=own)


CURVE = [_ckpt(64, 1.0), _ckpt(128, 5.0), _ckpt(192, 2.0)]


@pytest.fixture(scope="module")
def cfg(compose_cfg):
    return compose_cfg("env=brax/hopper", "train.learner=jax_ppo")


def _job(cfg, tmp_path, selection: str = "final", program=PROGRAM, **changes):
    from bird.learners.job import make_job

    job = make_job(cfg, "it1-c0", None, 3, 192, tmp_path / "deep" / "it1-c0")
    return replace(job, program=program, train=replace(job.train, checkpoint_selection=selection), **changes)


def test_the_shipped_checkpoint_is_what_the_selection_rule_picks_from_the_curve(cfg, tmp_path):
    index, record = choose_checkpoint(_job(cfg, tmp_path, "best_own_return"), CURVE)
    assert index == 1 and (record["rule"], record["index"], record["env_steps"]) == ("best_own_return", 1, 128)
    index, record = choose_checkpoint(_job(cfg, tmp_path, "final"), CURVE)
    assert index == 2 and record["n_checkpoints"] == 3 and record["eval_own_returns"] == [1.0, 5.0, 2.0]


def test_a_trained_job_gets_its_curve_record_policy_rollouts_and_checkpoint_choice(cfg, tmp_path):
    job = _job(cfg, tmp_path, "best_own_return")
    rollouts = {"obs": np.ones((3, 11)), "episode": np.array([0, 0, 1])}
    result = write_result(job, CURVE, 192, 4.5, None, {"settings": {"num_envs": 2}}, b"policy bytes", rollouts)
    out = tmp_path / "deep" / "it1-c0"
    assert (result.candidate_id, result.seed, result.curve, result.env_steps, result.wall_s, result.failure) == (
        "it1-c0", 3, tuple(CURVE), 192, 4.5, None)
    assert result.policy_path == str(out / "policy.msgpack") and (out / "policy.msgpack").read_bytes() == b"policy bytes"
    assert result.rollouts_path == str(out / "rollouts.npz")
    saved = load_rollouts(out / "rollouts.npz")
    assert saved["obs"].dtype == np.float32 and np.array_equal(saved["episode"], [0, 0, 1])
    assert json.loads((out / "jax_ppo.json").read_text()) == {"settings": {"num_envs": 2}, "program": PROGRAM.digest}
    assert (out / "jax_ppo.json").read_text().endswith("}\n")
    assert result.shipped == 1 and result.checkpoint_choice["index"] == 1
    assert json.loads((out / "checkpoint.json").read_text()) == result.checkpoint_choice
    assert (out / "curve.csv").read_text().splitlines()[0].startswith("env_steps,score")
    assert len((out / "curve.csv").read_text().splitlines()) == 4


def test_a_failed_job_gets_its_curve_and_record_but_no_policy_rollouts_or_choice(cfg, tmp_path):
    job = _job(cfg, tmp_path)
    result = write_result(job, CURVE[:1], 64, 1.0, FAILED, {}, b"policy", {"obs": np.ones((1, 11))})
    out = tmp_path / "deep" / "it1-c0"
    assert result.failure == FAILED and (result.policy_path, result.rollouts_path) == (None, None)
    assert (result.shipped, result.checkpoint_choice) == (-1, {})
    assert sorted(p.name for p in out.iterdir()) == ["curve.csv", "jax_ppo.json"]


def test_a_job_without_policy_rollouts_or_curve_gets_no_such_files(cfg, tmp_path):
    result = write_result(_job(cfg, tmp_path, program=None), [], 0, 0.0, None, {"x": 1}, None, None)
    out = tmp_path / "deep" / "it1-c0"
    assert (result.policy_path, result.rollouts_path, result.shipped, result.checkpoint_choice) == (None, None, -1, {})
    assert json.loads((out / "jax_ppo.json").read_text()) == {"x": 1, "program": None}
    assert sorted(p.name for p in out.iterdir()) == ["curve.csv", "jax_ppo.json"]


def test_a_job_trained_again_after_the_culprit_search_rewrites_its_folder(cfg, tmp_path):
    job = _job(cfg, tmp_path, program=None)
    write_result(job, [], 0, 0.0, FAILED, {"x": 1}, None, None)
    result = write_result(job, CURVE, 192, 2.0, None, {"x": 2}, b"p", None)
    out = tmp_path / "deep" / "it1-c0"
    assert result.shipped == 2 and (out / "jax_ppo.json").read_text() == '{\n "x": 2,\n "program": null\n}\n'
