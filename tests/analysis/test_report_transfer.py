"""The leaderboard's generalisation table (PRM4RL App. B.1): read from result.json `transfer`, one row per source and
unseen task with intervals over seeds, in the Markdown and the HTML page; a malformed record skips its run."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import write_run

from analysis import build_leaderboard
from analysis.report import write_leaderboard
from analysis.rundir import read_runs
from analysis.transfer_table import transfer_table

UNSEEN = ["metaworld/drawer_close", "metaworld/pick_place_wall"]


def _with_transfer(run, scores: dict[str, list]) -> None:
    path = run / "result.json"
    result = json.loads(path.read_text())
    result["transfer"] = {"source": result["env"], "episodes": 100, "seeds": [1000], "prior": "none",
                          "tasks": {t: {"scores": s, "mean": None, "failure": None} for t, s in scores.items()}}
    path.write_text(json.dumps(result))


@pytest.fixture()
def transferred(tmp_path):
    """prm4rl trained on metaworld/pick_place, seeds 0..2: drawer_close scores 0.2/0.4/0.6 (each the mean of the run's
    final seeds), pick_place_wall 1.0 on every seed; one more run of another method without a transfer record."""
    for seed, (a, b) in enumerate([([0.1, 0.3], [1.0]), ([0.4], [1.0]), ([0.6, None], [1.0])]):
        _with_transfer(write_run(tmp_path, "prm4rl", "metaworld", "pick_place", seed, minimal=True),
                       {UNSEEN[0]: a, UNSEEN[1]: b})
    write_run(tmp_path, "eureka", "metaworld", "pick_place", 0, minimal=True)
    return tmp_path


def test_the_table_gives_each_unseen_task_the_mean_over_seeds_of_each_runs_mean(transferred):
    coll = read_runs(transferred)
    table = transfer_table(coll.transfer, coll.runs, n_resamples=200)
    assert list(table["task"]) == ["metaworld/pick_place", *UNSEEN] and list(table["unseen"]) == [False, True, True]
    drawer = table[table["task"] == UNSEEN[0]].iloc[0]
    assert drawer["n_seeds"] == 3 and drawer["mean"] == pytest.approx(0.4)  # runs' means 0.2, 0.4, 0.6
    assert drawer["low"] < 0.4 < drawer["high"] and not drawer["degenerate"]
    wall = table[table["task"] == UNSEEN[1]].iloc[0]
    assert wall["mean"] == 1.0 and wall["degenerate"]
    source = table.iloc[0]
    runs = coll.runs[coll.runs["method"] == "prm4rl"]
    assert source["n_seeds"] == 3 and source["mean"] == pytest.approx(runs["returned_score"].mean())
    assert set(table["method"]) == {"prm4rl"}  # eureka's run transferred nothing


def test_a_task_no_seed_could_be_evaluated_on_has_no_mean(tmp_path):
    _with_transfer(write_run(tmp_path, "prm4rl", "metaworld", "pick_place", 0, minimal=True), {UNSEEN[0]: [None]})
    coll = read_runs(tmp_path)
    row = transfer_table(coll.transfer, coll.runs, n_resamples=200).iloc[1]
    assert row["n_seeds"] == 0 and np.isnan(row["mean"])


def test_the_leaderboard_renders_a_generalisation_section(transferred, tmp_path):
    lb = build_leaderboard(transferred, n_resamples=200, bt_resamples=50, figures=False)
    md = write_leaderboard(lb, tmp_path / "out").read_text()
    section = md.split("## Generalisation", 1)[1].split("\n## ", 1)[0]
    assert "| prm4rl | metaworld/pick_place | metaworld/pick_place (source) | 3 |" in section
    assert "| prm4rl | metaworld/pick_place | metaworld/drawer_close | 3 | 0.400 [" in section
    html = (tmp_path / "out" / "leaderboard.html").read_text()
    assert '<section id="generalisation">' in html and "metaworld/pick_place_wall" in html


def test_no_section_without_a_transfer_record(make_run, tmp_path):
    make_run("eureka", "metaworld", "push", 0, minimal=True)
    lb = build_leaderboard(make_run("zeroshot", "metaworld", "push", 0, minimal=True).parents[3], n_resamples=200,
                           bt_resamples=50, figures=False)
    assert lb.transfer.empty and "Generalisation" not in write_leaderboard(lb, tmp_path / "o").read_text()


@pytest.mark.parametrize("bad", [{"source": "metaworld/pick_place", "tasks": ["drawer_close"]},
                                 {"source": "metaworld/pick_place", "tasks": {"x": {"scores": ["0.5"]}}},
                                 {"source": "\x1b[2J", "tasks": {}}])
def test_a_malformed_transfer_record_skips_its_run(tmp_path, bad):
    run = write_run(tmp_path, "prm4rl", "metaworld", "pick_place", 0, minimal=True)
    result = json.loads((run / "result.json").read_text())
    (run / "result.json").write_text(json.dumps({**result, "transfer": bad}))
    with pytest.warns(UserWarning, match="skipped 1 run"):
        coll = read_runs(tmp_path)
    assert coll.runs.empty and isinstance(coll.transfer, pd.DataFrame) and coll.transfer.empty
