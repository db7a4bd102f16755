"""What the leaderboard copies next to itself (each run's result, config and returned reward; the clips), never a
file from outside the run directory; and the per-task table's cells on hand-made scores."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import write_run

from bird.analysis import read_runs
from bird.analysis.artefacts import copy_run_files
from bird.analysis.bootstrap import interval
from bird.analysis.clips import pick_clips
from bird.analysis.task_table import per_task_table


def test_each_runs_result_config_and_returned_reward_are_copied_under_runs(tmp_path):
    run = write_run(tmp_path / "src", "eureka", "mujoco", "hopper", 3)
    runs = read_runs(tmp_path / "src", warn=False).runs
    files = copy_run_files(runs, tmp_path / "out")
    returned = json.loads((run / "result.json").read_text())["returned"]["candidate_id"]
    where = "runs/eureka/mujoco-hopper/seed3"
    assert files == {("mujoco", "hopper", "eureka", 3): {"result": f"{where}/result.json",
                                                          "config": f"{where}/config.yaml",
                                                          "reward": f"{where}/reward.py"}}
    assert (tmp_path / "out" / where / "result.json").read_bytes() == (run / "result.json").read_bytes()
    assert (tmp_path / "out" / where / "reward.py").read_bytes() == \
        (run / "candidates" / returned / "reward.py").read_bytes()


def test_a_run_directory_cannot_make_the_page_copy_a_file_from_elsewhere(tmp_path):
    secret = tmp_path / "secret"
    (secret / "x").mkdir(parents=True)
    (secret / "x" / "reward.py").write_text("not yours")
    (secret / "config.yaml").write_text("not yours")
    run = write_run(tmp_path / "src", "eureka", "mujoco", "hopper", 0)
    (run / "config.yaml").unlink()
    os.symlink(secret / "config.yaml", run / "config.yaml")  # a link out of the run directory
    runs = read_runs(tmp_path / "src", warn=False).runs
    runs["returned_candidate"] = os.path.relpath(secret / "x", run / "candidates")  # ../../../secret/x
    files = copy_run_files(runs, tmp_path / "out")
    assert list(files.values()) == [{"result": "runs/eureka/mujoco-hopper/seed0/result.json"}]
    assert "not yours" not in "".join(p.read_text() for p in (tmp_path / "out").rglob("*") if p.is_file())


def test_a_clip_outside_its_run_directory_is_never_picked(tmp_path):
    outside = tmp_path / "outside.mp4"
    outside.write_bytes(b"not a clip of this run")
    run = write_run(tmp_path / "src", "eureka", "mujoco", "hopper", 0)
    result = json.loads((run / "result.json").read_text())
    result["videos"] = {"clips": [{"video": os.path.relpath(outside, run), "score": 1.0}]}
    (run / "result.json").write_text(json.dumps(result))
    assert pick_clips(read_runs(tmp_path / "src", warn=False).runs).empty


def test_a_run_whose_directory_is_gone_gets_no_links(tmp_path):
    runs = pd.DataFrame([{"benchmark": "mujoco", "task": "hopper", "method": "eureka", "seed": 0,
                          "run_dir": str(tmp_path / "gone"), "returned_candidate": "it1-c0"}])
    assert copy_run_files(runs, tmp_path / "out") == {} and not (tmp_path / "out").exists()


def test_the_per_task_table_has_one_row_per_task_and_method_with_its_seed_interval():
    runs = pd.DataFrame({"benchmark": ["b"] * 6, "task": ["t"] * 4 + ["u"] * 2, "method": ["x", "x", "x", "y", "x", "x"],
                         "seed": [0, 1, 2, 0, 0, 1], "returned_score": [0.2, 0.9, 0.4, 0.7, np.nan, np.nan]})
    table = per_task_table(runs, n_resamples=50, random_state=3)
    assert [tuple(r) for r in table[["task", "method", "n_runs", "n_seeds"]].to_numpy()] == \
        [("t", "x", 3, 3), ("t", "y", 1, 1), ("u", "x", 2, 0)]
    iv = interval(np.array([0.2, 0.9, 0.4]), "BCa", n_resamples=50, random_state=3)
    x = table.iloc[0]
    assert (x["mean"], x["low"], x["high"], x["min"], x["max"]) == pytest.approx((0.5, iv.low, iv.high, 0.2, 0.9))
    assert not x["degenerate"] and x["low"] < 0.5 < x["high"]
    assert table.iloc[1]["degenerate"] and table.iloc[1][["mean", "low", "high"]].tolist() == [0.7, 0.7, 0.7]
    assert table.iloc[2][["mean", "low", "high", "min", "max"]].isna().all()  # no seed returned a reward
