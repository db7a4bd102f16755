"""Skip-completed and re-run rules for a run directory: which directories count as finished, what a re-run clears."""

from __future__ import annotations

import json

import pytest

from bird.completed import END_STATES, RUN_ENTRIES, clear_previous_run, completed_result, end_state
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


# -- how a search ends (bird.completed.end_state) ------------------------------------------------------------------
SCORED = {"policy_trainings": 4, "n_trained": 3, "failures": {"timeout": 1}, "returned": {"candidate_id": "it1-c2"},
          "no_return_reason": None, "returned_score": 0.4, "no_score_reason": None}


def test_a_search_with_a_scored_returned_reward_ends_completed():
    assert end_state(SCORED) == ("completed", None)
    assert end_state({**SCORED, "policy_trainings": 0, "n_trained": 0}) == ("completed", None)  # learner=none


@pytest.mark.parametrize("kind", ["train_error", "ambiguous_answer", "a_kind_added_later"])
def test_a_search_whose_every_training_failed_ends_failed_whatever_the_failure_kind(kind):
    state, reason = end_state({**SCORED, "n_trained": 0, "failures": {kind: 4, "parse_error": 1}})
    assert state == "failed" and "no candidate trained" in reason
    assert f"{kind} × 4" in reason and "parse_error × 1" in reason and "4 trainings" in reason


def test_a_search_that_returned_nothing_ends_failed_with_the_no_return_reason():
    assert end_state({**SCORED, "returned": None, "returned_score": None, "no_return_reason": "it1-c0: screened"}) \
        == ("failed", "it1-c0: screened")


def test_a_search_whose_returned_reward_has_no_score_ends_failed_naming_it_and_why():
    state, reason = end_state({**SCORED, "returned_score": None, "no_score_reason": "every final-retrain seed failed"})
    assert state == "failed" and "it1-c2" in reason and "every final-retrain seed failed" in reason


def test_every_end_state_but_completed_is_run_again_and_counted_by_bird_status(cfg, tmp_path):
    from bird import status

    assert set(END_STATES) <= set(status.STATES)
    for state in END_STATES:
        run = _finished(tmp_path / state, cfg, status=state)
        (run / "status.json").write_text(json.dumps({"state": state}))
        assert (completed_result(run, cfg) is None) == (state != "completed")
    counts = status.summarise(tmp_path)
    assert all(counts[state] == 1 for state in END_STATES), counts


def test_a_search_whose_llm_calls_failed_ends_incomplete_before_anything_else_with_the_last_error():
    failed = {**SCORED, "n_trained": 0, "llm_failed_calls": 3, "llm_refused_calls": 2, "llm_last_error": "x" * 400}
    assert end_state(failed) == ("incomplete", "3 LLM call(s) failed after every retry; the last: " + "x" * 300)
    assert end_state({**SCORED, "llm_failed_calls": 1}) == ("incomplete", "1 LLM call(s) failed after every retry; "
                                                                          "the last: ?")


def test_a_search_whose_calls_the_sweeps_caps_refused_ends_budget_exhausted_before_its_failures():
    refused = {**SCORED, "n_trained": 0, "llm_failed_calls": 0, "llm_refused_calls": 2,
               "stop_reason": "budget.sweep_max_llm_calls=10 reached"}
    assert end_state(refused) == ("budget_exhausted", "the sweep's caps refused 2 LLM call(s): "
                                                      "budget.sweep_max_llm_calls=10 reached")
    assert end_state({**SCORED, "llm_refused_calls": 1})[1] == "the sweep's caps refused 1 LLM call(s): generation " \
                                                               "stopped"


def test_the_reasons_of_a_failed_search_have_their_defaults_when_the_result_gives_none():
    assert end_state({**SCORED, "n_trained": 0, "failures": None}) == (
        "failed", "no candidate trained: every one of the loop's 4 trainings failed (candidate failures: none "
                  "recorded)")
    assert end_state({**SCORED, "returned": None}) == ("failed", "no candidate could be returned")
    assert end_state({**SCORED, "returned_score": None}) == ("failed", "the returned reward it1-c2 has no score: "
                                                                        "not trained")
    assert end_state({**SCORED, "n_trained": 0, "failures": {"a": 2, "b": 1}})[1].endswith(
        "(candidate failures: a × 2, b × 1)")


def test_status_or_result_files_that_are_not_objects_are_not_a_finished_run(cfg, tmp_path):
    run = _finished(tmp_path / "run", cfg)
    (run / "status.json").write_text('["completed"]')
    assert completed_result(run, cfg) is None
    run = _finished(tmp_path / "run2", cfg)
    (run / "result.json").write_text('"completed"')
    assert completed_result(run, cfg) is None


def test_clearing_removes_links_without_following_them(tmp_path):
    outside = tmp_path / "outside"
    (outside / "keep").mkdir(parents=True)
    run = tmp_path / "run"
    run.mkdir()
    (run / "candidates").symlink_to(outside, target_is_directory=True)
    (run / "result.json").symlink_to(tmp_path / "nowhere")
    assert clear_previous_run(run) == ["candidates", "result.json"]
    assert (outside / "keep").is_dir() and list(run.iterdir()) == []


def test_the_refusal_of_another_configs_run_names_both_hashes(cfg, tmp_path):
    with pytest.raises(ConfigError) as err:
        completed_result(_finished(tmp_path, cfg, config_hash="0123abcd"), cfg)
    assert f"(hash 0123abcd != {config_hash(cfg)})" in str(err.value)


def test_a_search_that_stops_before_rl_ends_completed_with_an_unscored_returned_reward():
    assert end_state({**SCORED, "returned_score": None, "stops_before_rl": True}) == ("completed", None)
    assert end_state({**SCORED, "returned_score": None, "stops_before_rl": False})[0] == "failed"
