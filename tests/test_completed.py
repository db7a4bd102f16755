"""Skip-completed and re-run rules for a run directory: which directories count as finished, what a re-run clears."""

from __future__ import annotations

import json

import pytest

from bird.completed import RUN_ENTRIES, clear_previous_run, completed_result
from bird.config.load import ConfigError, config_hash


@pytest.fixture(scope="module")
def cfg(compose_cfg):
    return compose_cfg("method=zeroshot", "env=mujoco/inverted_pendulum")


def _finished(run, cfg, **result):
    run.mkdir(parents=True, exist_ok=True)
    (run / "status.json").write_text(json.dumps({"state": "completed"}))
    body = {"status": "completed", "config_hash": config_hash(cfg), "returned_score": 0.25, **result}
    (run / "result.json").write_text(json.dumps(body))
    return run


def test_a_completed_run_of_the_same_config_is_returned(cfg, tmp_path):
    assert completed_result(_finished(tmp_path, cfg), cfg)["returned_score"] == 0.25


@pytest.mark.parametrize("damage", ["running_without_result", "truncated_result", "no_status", "failed_status",
                                    "result_not_completed", "empty_directory"])
def test_a_half_written_or_failed_directory_is_run_again(cfg, tmp_path, damage):
    run = _finished(tmp_path / "run", cfg)
    if damage == "running_without_result":
        (run / "status.json").write_text(json.dumps({"state": "running"}))
        (run / "result.json").unlink()
    elif damage == "truncated_result":
        (run / "result.json").write_text('{"status": "completed", "config_ha')
    elif damage == "no_status":
        (run / "status.json").unlink()
    elif damage == "failed_status":
        (run / "status.json").write_text(json.dumps({"state": "failed", "error": "boom"}))
    elif damage == "result_not_completed":
        _finished(run, cfg, status="running")
    else:
        (run / "status.json").unlink()
        (run / "result.json").unlink()
    assert completed_result(run, cfg) is None


def test_a_completed_run_of_another_config_is_refused_with_the_way_out(cfg, compose_cfg, tmp_path):
    other = compose_cfg("method=zeroshot", "env=mujoco/inverted_pendulum", "seed=1")
    with pytest.raises(ConfigError, match="another config.*run.skip_completed=false"):
        completed_result(_finished(tmp_path, cfg), other)


def test_clearing_removes_every_record_of_the_previous_search_and_nothing_else(tmp_path):
    for name in RUN_ENTRIES:
        if "." in name:
            (tmp_path / name).write_text("old")
        else:
            (tmp_path / name / "it1-c0").mkdir(parents=True)
    (tmp_path / ".hydra").mkdir()
    (tmp_path / ".hydra" / "config.yaml").write_text("hydra's")
    (tmp_path / "__main__.log").write_text("hydra's log")
    (tmp_path / "notes.txt").write_text("the user's")
    assert clear_previous_run(tmp_path) == list(RUN_ENTRIES)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".hydra", "__main__.log", "notes.txt"]
    assert clear_previous_run(tmp_path) == []
