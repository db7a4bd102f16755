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


# -- each rule of copy_run_files and copy_clips on hand-made run directories ---------------------------------------
def _run_dir(root, name="r"):
    run = root / name
    (run / "candidates" / "it1-c0").mkdir(parents=True)
    (run / "result.json").write_text('{"returned_score": 0.5}')
    (run / "config.yaml").write_text("seed: 0\n")
    (run / "candidates" / "it1-c0" / "reward.py").write_text("def compute_reward(): ...\n")
    return run


def _row(run, method="eureka", seed=0, **extra):
    return {"benchmark": "mujoco", "task": "hopper", "method": method, "seed": seed, "run_dir": str(run),
            "returned_candidate": "it1-c0", **extra}


def test_names_in_the_copied_paths_keep_only_safe_characters(tmp_path):
    run = _run_dir(tmp_path)
    runs = pd.DataFrame([{**_row(run, method="my method/v2+x.y-z"), "task": "../up"}])
    files = copy_run_files(runs, tmp_path / "out")
    assert files[("mujoco", "../up", "my method/v2+x.y-z", 0)]["result"] == \
        "runs/my_method_v2+x.y-z/mujoco-.._up/seed0/result.json"


def test_a_missing_file_leaves_out_its_label_only_and_a_gone_run_leaves_out_only_itself(tmp_path):
    first, second = _run_dir(tmp_path, "a"), _run_dir(tmp_path, "b")
    (second / "config.yaml").unlink()
    runs = pd.DataFrame([_row(tmp_path / "gone"), _row(first, seed=1), _row(second, seed=2)])
    files = copy_run_files(runs, tmp_path / "out")
    assert sorted(files) == [("mujoco", "hopper", "eureka", 1), ("mujoco", "hopper", "eureka", 2)]
    assert sorted(files[("mujoco", "hopper", "eureka", 2)]) == ["result", "reward"]


def test_a_file_bird_refuses_to_copy_leaves_out_its_label_only(tmp_path):
    run = _run_dir(tmp_path)
    (run / "config.yaml").unlink()
    (run / "config.yaml").mkdir()  # inside, but not a file
    files = copy_run_files(pd.DataFrame([_row(run)]), tmp_path / "out")
    assert sorted(files[("mujoco", "hopper", "eureka", 0)]) == ["result", "reward"]


def test_a_run_without_a_returned_candidate_gets_its_result_and_config(tmp_path):
    run = _run_dir(tmp_path)
    for name in ("None", "nan"):  # what the id would format as: never read as one
        (run / "candidates" / name).mkdir()
        (run / "candidates" / name / "reward.py").write_text("not returned\n")
    row = _row(run)
    del row["returned_candidate"]
    assert sorted(copy_run_files(pd.DataFrame([row]), tmp_path / "out")[("mujoco", "hopper", "eureka", 0)]) == [
        "config", "result"]
    nan = copy_run_files(pd.DataFrame([_row(run, returned_candidate=np.nan)]), tmp_path / "out2")
    assert sorted(nan[("mujoco", "hopper", "eureka", 0)]) == ["config", "result"]


def test_a_link_to_another_file_of_the_same_run_is_copied(tmp_path):
    run = _run_dir(tmp_path)
    reward = run / "candidates" / "it1-c0" / "reward.py"
    (run / "kept.py").write_text("the run's own file\n")
    reward.unlink()
    reward.symlink_to(run / "kept.py")
    files = copy_run_files(pd.DataFrame([_row(run)]), tmp_path / "out")
    assert (tmp_path / "out" / files[("mujoco", "hopper", "eureka", 0)]["reward"]).read_text() == "the run's own file\n"


def test_a_result_is_copied_under_its_own_size_cap_and_the_other_files_under_the_text_cap(tmp_path, monkeypatch):
    from bird import files as bird_files

    run = _run_dir(tmp_path)
    monkeypatch.setitem(bird_files.LIMITS, "text", 12)  # config.yaml (8 bytes) fits, result.json (23) does not
    (run / "candidates" / "it1-c0" / "reward.py").write_text("x" * 13)
    copied = copy_run_files(pd.DataFrame([_row(run)]), tmp_path / "out")
    assert sorted(copied[("mujoco", "hopper", "eureka", 0)]) == ["config", "result"]


def test_a_file_refused_ahead_of_others_leaves_out_its_label_only(tmp_path, monkeypatch):
    from bird import files as bird_files

    run = _run_dir(tmp_path)
    monkeypatch.setitem(bird_files.LIMITS, "text", 12)
    (run / "config.yaml").write_text("x" * 13)  # over the cap: refused by copy_file, before the reward is reached
    (run / "candidates" / "it1-c0" / "reward.py").write_text("x" * 12)
    copied = copy_run_files(pd.DataFrame([_row(run)]), tmp_path / "out")
    assert sorted(copied[("mujoco", "hopper", "eureka", 0)]) == ["result", "reward"]


def test_the_clips_folder_is_made_on_a_page_that_has_none(tmp_path):
    from bird.analysis.artefacts import copy_clips

    (tmp_path / "c.mp4").write_bytes(b"clip")
    out = tmp_path / "out"
    out.mkdir()
    clips = pd.DataFrame([{"benchmark": "b", "task": "t", "method": "m", "path": str(tmp_path / "c.mp4")}])
    assert copy_clips(clips, out) == {("b", "t", "m"): "clips/b-t-m.mp4"}
    assert sorted(p.name for p in out.iterdir()) == ["clips"]
    assert (out / "clips" / "b-t-m.mp4").read_bytes() == b"clip"


def test_clips_are_copied_one_per_method_and_task_under_safe_names(tmp_path):
    from bird.analysis.artefacts import copy_clips

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "c.mp4").write_bytes(b"clip a")
    (tmp_path / "b.mp4").write_bytes(b"clip b")
    clips = pd.DataFrame([{"benchmark": "brax", "task": "hopper", "method": "m/x", "path": str(tmp_path / "a" / "c.mp4")},
                          {"benchmark": "mujoco", "task": "ant", "method": "n", "path": str(tmp_path / "b.mp4")}])
    out = tmp_path / "out"
    out.mkdir()
    (out / "clips").mkdir()  # a page written again
    assert copy_clips(clips, out) == {("brax", "hopper", "m/x"): "clips/brax-hopper-m_x.mp4",
                                      ("mujoco", "ant", "n"): "clips/mujoco-ant-n.mp4"}
    assert (out / "clips" / "brax-hopper-m_x.mp4").read_bytes() == b"clip a"
    assert (out / "clips" / "mujoco-ant-n.mp4").read_bytes() == b"clip b"
    assert copy_clips(clips.iloc[:0], tmp_path / "none") == {} and not (tmp_path / "none").exists()


def test_a_clip_that_is_a_link_out_of_its_folder_is_refused(tmp_path):
    from bird.analysis.artefacts import copy_clips
    from bird.files import UnsafeFileError

    (tmp_path / "secret").write_bytes(b"not a clip")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "c.mp4").symlink_to(tmp_path / "secret")
    (tmp_path / "out").mkdir()
    clips = pd.DataFrame([{"benchmark": "b", "task": "t", "method": "m", "path": str(tmp_path / "run" / "c.mp4")}])
    with pytest.raises(UnsafeFileError):
        copy_clips(clips, tmp_path / "out")


def test_a_run_whose_only_file_links_out_gets_no_folder_on_the_page(tmp_path):
    (tmp_path / "secret.json").write_text("{}")
    run = tmp_path / "run"
    run.mkdir()
    (run / "result.json").symlink_to(tmp_path / "secret.json")
    assert copy_run_files(pd.DataFrame([_row(run)]), tmp_path / "out") == {("mujoco", "hopper", "eureka", 0): {}}
    assert not (tmp_path / "out").exists()
