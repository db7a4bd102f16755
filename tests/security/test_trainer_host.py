"""The trainer's host against trainers that misbehave on purpose (fake_workers/trainer.py, behind the real trainer
layers): every malformed frame, wrong value, silence or crash becomes the group's recorded failure, never a host
exception, and is blamed on the programs only once they were sent (so the culprit search runs only then). A
well-formed run is read into results and files (the positive control)."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from bird.learners import trainer_host  # noqa: E402
from bird.reward import trainer_wall  # noqa: E402
from bird.reward.jax_export import ExportedReward  # noqa: E402
from bird.types import FailureKind  # noqa: E402


@pytest.fixture
def run(monkeypatch, compose_cfg, tmp_path):
    from bird.learners.job import make_job

    monkeypatch.setenv("BIRD_JAX_CACHE", "off")  # no compile step: nothing to compile
    monkeypatch.setattr(trainer_wall, "TRAINER_MODULE", "fake_workers.trainer")
    cfg = compose_cfg("env=brax/hopper", "train.learner=jax_ppo", "train.jax.update_timeout_s=3",
                      "budget.n_checkpoints=2")

    def _run(scenario: str, **changes):
        job = replace(make_job(cfg, f"scenario:{scenario}", None, 0, 192, tmp_path / "job"),
                      program=ExportedReward(b"\0" * 64, ("a",), 11, 3, 32), save_policy=True, **changes)
        return job, trainer_host.run_trainer([job], 1)

    return _run


def test_a_well_formed_run_is_read_into_results_and_files(run, tmp_path):
    job, attempt = run("clean")
    assert attempt.group is None and len(attempt.results) == 1, attempt.group
    result = attempt.results[0]
    assert result.ok and [c.env_steps for c in result.curve] == [128, 192] and result.env_steps == 192
    assert result.curve[0].components == {"a": 0.5} and Path(result.policy_path).read_bytes() == b"POLICY!!"
    assert result.shipped == 1 and json.loads((tmp_path / "job" / "checkpoint.json").read_text())["index"] == 1
    record = json.loads((tmp_path / "job" / "jax_ppo.json").read_text())
    assert record["devices"] == ["TFRT_CPU_0"] and all(record["isolation"].values()), record


@pytest.mark.parametrize("scenario, kind, blamed, words", [
    ("setup_deep_json", FailureKind.TRAIN_ERROR, False, "nested too deeply"),
    ("setup_no_settings", FailureKind.TRAIN_ERROR, False, "steps_per_update must be an integer"),
    ("load_live_out_of_range", FailureKind.BAD_OUTPUT, True, "live jobs"),
    ("load_failure_key", FailureKind.BAD_OUTPUT, True, "not in the group"),
    ("load_crash", FailureKind.RUNTIME_ERROR, True, "trainer crashed (SIGSEGV)"),
    ("train_update_skips", FailureKind.BAD_OUTPUT, True, "update must be an integer in [1, 1]"),
    ("train_update_flood", FailureKind.BAD_OUTPUT, True, "update must be an integer in [4, 3]"),
    ("train_checkpoint_inf", FailureKind.BAD_OUTPUT, True, "score=inf is not finite"),
    ("train_checkpoint_extra", FailureKind.BAD_OUTPUT, True, "missing or unknown fields"),
    ("train_never_replies", FailureKind.TIMEOUT, True, "train.jax.update_timeout_s=3 (wall clock)"),
    ("train_ships_another_checkpoint", FailureKind.BAD_OUTPUT, True, "shipped checkpoint 0; its rule picks 1"),
    ("train_crash", FailureKind.RUNTIME_ERROR, True, "trainer crashed (SIGSEGV)"),
    ("outputs_oversized", FailureKind.BAD_OUTPUT, True, "payload of 1099511627776 bytes"),
])
def test_a_misbehaving_trainer_is_a_recorded_failure_of_its_group(run, scenario, kind, blamed, words):
    _, attempt = run(scenario)
    assert attempt.results == [] and attempt.group is not None
    assert attempt.group.kind == kind and attempt.blame is blamed and words in attempt.group.reason, attempt.group
