import json
import shutil
import warnings

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import CORRUPTIONS, corrupt, write_run

from bird.analysis import find_run_dirs, load_parquet, load_runs, query, read_runs, save_parquet


def _read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return read_runs(path)


def test_load_runs_gives_one_row_per_candidate_with_run_fields_repeated(make_run):
    run = make_run(iterations=2, candidates=3)
    df = load_runs(run)
    assert len(df) == 6
    result = json.loads((run / "result.json").read_text())
    assert (df["returned_score"] == result["returned_score"]).all()
    assert set(df["candidate"]) == {f"it{i}-c{c}" for i in (1, 2) for c in range(3)}
    assert df["is_returned"].sum() == 1
    assert {"benchmark", "task", "method", "seed", "iteration", "candidate", "score", "env_steps", "llm_calls",
            "cost_usd"} <= set(df.columns)


def test_run_level_table_has_one_row_per_run(synthetic_sweep):
    runs = _read(synthetic_sweep).runs
    assert len(runs) == 3 * 4 * 3
    assert not runs.duplicated(["benchmark", "task", "method", "seed"]).any()


@pytest.mark.parametrize("kind", CORRUPTIONS)
def test_broken_run_is_reported_and_not_counted(make_run, kind):
    good = make_run(seed=0)
    bad = corrupt(make_run(seed=1), kind)
    with pytest.warns(UserWarning, match="skipped 1 run directory"):
        coll = read_runs(good.parents[2])
    assert list(coll.runs["seed"]) == [0]
    assert [s.path for s in coll.skipped] == [str(bad.resolve())]
    assert set(coll.candidates["seed"]) == {0}


def test_skipped_reasons_reach_the_dataframe_attrs(synthetic_sweep):
    with pytest.warns(UserWarning):
        df = load_runs(synthetic_sweep, level="run")
    reasons = " ".join(r for _, r in df.attrs["skipped"])
    assert "running" in reasons and "invalid JSON" in reasons and "returned_score" in reasons


def test_incumbent_score_follows_the_best_fitness_so_far(make_run):
    run = make_run(iterations=3)
    result = json.loads((run / "result.json").read_text())
    result["iterations"] = [
        {"iteration": 1, "best_candidate": "it1-c0", "best_fitness": 0.5, "best_score": 0.4},
        {"iteration": 2, "best_candidate": "it2-c1", "best_fitness": 0.3, "best_score": 0.9},
        {"iteration": 3, "best_candidate": "it3-c2", "best_fitness": 0.7, "best_score": 0.6}]
    (run / "result.json").write_text(json.dumps(result))
    it = load_runs(run, level="iteration")
    assert list(it["incumbent_score"]) == [0.4, 0.4, 0.6]
    assert list(it["incumbent_candidate"]) == ["it1-c0", "it1-c0", "it3-c2"]


def test_duplicate_run_keeps_the_latest_and_reports_the_other(make_run):
    old = make_run(seed=0, stamp="2025-01-01T00:00:00")
    new = make_run(seed=0, stamp="2025-02-01T00:00:00")
    with pytest.warns(UserWarning, match="duplicate"):
        coll = read_runs(old.parents[3])
    assert list(coll.runs["run_dir"]) == [str(new.resolve())]
    assert coll.skipped[0].path == str(old.resolve())


def test_find_run_dirs_recurses_and_rejects_missing_paths(synthetic_sweep, tmp_path):
    assert len(find_run_dirs([synthetic_sweep])) == 3 * 4 * 3 + 3
    with pytest.raises(FileNotFoundError, match="does not exist"):
        find_run_dirs([tmp_path / "nope"])


def test_empty_folder_gives_empty_tables(tmp_path):
    coll = read_runs(tmp_path)
    assert coll.runs.empty and coll.candidates.empty and not coll.skipped
    assert "returned_score" in coll.runs.columns


def test_unknown_level_is_rejected(make_run):
    with pytest.raises(ValueError, match="level='cell'"):
        load_runs(make_run(), level="cell")


def test_epic_csv_is_read_when_present(make_run):
    run = make_run(iterations=2, epic=True)
    epic = load_runs(run, level="epic")
    assert list(epic["iteration"]) == [1, 2] and epic["distance"].between(0, 1).all()


def test_parquet_round_trip_and_duckdb_aggregate_match_pandas(synthetic_sweep, tmp_path):
    coll = _read(synthetic_sweep)
    out = save_parquet(coll, tmp_path / "pq")
    back = load_parquet(out)
    pd.testing.assert_frame_equal(back.runs, coll.runs, check_dtype=False)
    assert back.skipped == coll.skipped
    sql = ("SELECT benchmark, method, avg(returned_score) AS mean, count(*) AS n FROM runs "
           "GROUP BY ALL ORDER BY benchmark, method")
    from_disk, in_memory = query(sql, out), query(sql, coll)
    want = coll.runs.groupby(["benchmark", "method"])["returned_score"].agg(["mean", "count"]).reset_index()
    np.testing.assert_allclose(from_disk["mean"], want["mean"])
    np.testing.assert_array_equal(from_disk["n"], want["count"])
    pd.testing.assert_frame_equal(from_disk, in_memory)


def test_run_without_candidates_folder_still_loads(tmp_path):
    run = write_run(tmp_path, "zeroshot", "mujoco", "hopper", 0, iterations=1, candidates=1)
    shutil.rmtree(run / "candidates")
    coll = read_runs(tmp_path)
    assert len(coll.runs) == 1 and coll.candidates.empty


def test_incumbent_is_the_recorded_returned_so_far_candidate(make_run):
    run = make_run(iterations=3)
    cands = load_runs(run).set_index("candidate")
    it = load_runs(run, level="iteration")
    result = json.loads((run / "result.json").read_text())
    for row, logged in zip(it.itertuples(), result["iterations"], strict=True):
        assert row.incumbent_candidate == logged["returned_so_far"]
        assert row.incumbent_score == cands.loc[logged["returned_so_far"], "score"]


def test_design_choices_make_a_separate_configuration_label(tmp_path):
    write_run(tmp_path, "eureka", "mujoco", "hopper", 0)
    write_run(tmp_path, "eureka", "mujoco", "hopper", 0, choices=["four_turn_history"])
    runs = read_runs(tmp_path).runs
    assert sorted(runs["method"]) == ["eureka", "eureka+four_turn_history"]
    assert set(runs["base_method"]) == {"eureka"}


def test_completed_run_without_a_returned_reward_is_kept_as_nan_and_warned(make_run):
    run = make_run()
    result = json.loads((run / "result.json").read_text())
    result["returned_score"] = None
    (run / "result.json").write_text(json.dumps(result))
    with pytest.warns(UserWarning, match="returned no reward"):
        coll = read_runs(run)
    assert len(coll.runs) == 1 and np.isnan(coll.runs["returned_score"].iloc[0]) and not coll.skipped
