import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from synthetic_runs import write_run

from bird.analysis import build_leaderboard, read_runs, write_leaderboard
from bird.analysis.__main__ import _source, main

FAST = ["--n-resamples", "300", "--bt-resamples", "30", "--curve-resamples", "100"]
FIGURES = ["method_comparison", "bradley_terry", "curves_iteration", "curves_env_steps", "epic", "paired",
           "profiles"]


def _build_source(source, **kw):
    return build_leaderboard(source, n_resamples=300, bt_resamples=30, curve_resamples=100, **kw)


def _build(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return _build_source(read_runs(path), **kw)


def test_leaderboard_command_writes_markdown_html_and_every_figure(synthetic_sweep, tmp_path, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(["leaderboard", str(synthetic_sweep), "--out", str(tmp_path), *FAST]) == 0
    for name in FIGURES:
        assert (tmp_path / f"{name}.png").stat().st_size > 1000
    md = (tmp_path / "leaderboard.md").read_text()
    assert "## mujoco" in md and "## metaworld" in md and "## pooled" in md
    assert "Skipped 3 run directories" in md and "SYNTHETIC" in md
    assert "## Per task" in md and "| mujoco/hopper | eureka | 3 | 0." in md
    assert "Not drawn" not in md
    assert "<table" in (tmp_path / "leaderboard.html").read_text()
    assert "wrote" in capsys.readouterr().out


def test_leaderboard_from_recorded_smoke_runs_has_every_figure_but_epic(smoke_runs, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(["leaderboard", str(smoke_runs), "--out", str(tmp_path), *FAST]) == 0
    md = (tmp_path / "leaderboard.md").read_text()
    assert "4 runs; 2 methods; 1 task." in md and "offline synthesiser" in md
    drawn = {p.stem for p in tmp_path.glob("*.png")}
    assert drawn == set(FIGURES) - {"epic"}
    assert "no EPIC data" in md


def test_one_method_one_seed_without_epic_reports_instead_of_crashing(tmp_path):
    write_run(tmp_path / "runs", "eureka", "mujoco", "hopper", 0)
    lb = _build(tmp_path / "runs")
    md = write_leaderboard(lb, tmp_path / "out").read_text()
    assert lb.figures["epic"] is None and lb.figures["paired"] is None and lb.figures["bradley_terry"] is None
    assert lb.figures["method_comparison"] is not None
    assert "no EPIC data" in md and "needs two methods" in md and "degenerate" in md
    assert (tmp_path / "out" / "method_comparison.png").is_file()


def test_method_missing_on_some_tasks_gets_no_aggregate_over_a_different_task_set(tmp_path):
    root = tmp_path / "runs"
    for seed in (0, 1):
        for task in ("hopper", "ant"):
            write_run(root, "eureka", "mujoco", task, seed)
        write_run(root, "card", "mujoco", "hopper", seed)
    lb = _build(root)
    table = lb.tables["mujoco"].set_index("method")
    assert table.loc["card", "mean [95% BCa]"] == "n/a (lacks tasks)"
    assert any("card lacks tasks ['mujoco/ant']" in n for n in lb.notes)


def test_empty_collection_writes_a_report_saying_so(tmp_path):
    (tmp_path / "runs").mkdir()
    lb = _build(tmp_path / "runs")
    assert "no completed runs" in write_leaderboard(lb, tmp_path / "out").read_text()


def test_export_writes_parquet_that_the_leaderboard_reads_back(synthetic_sweep, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(["export", str(synthetic_sweep), "--out", str(tmp_path / "pq")]) == 0
        direct = _build(synthetic_sweep, figures=False)
        from_parquet = _build_source(_source([str(tmp_path / "pq")]), figures=False)
    assert len(from_parquet.tables) == 3 and from_parquet.header == direct.header
    for name, table in direct.tables.items():
        assert table.equals(from_parquet.tables[name])


def test_module_entry_point_runs_as_a_subprocess():
    out = subprocess.run([sys.executable, "-m", "bird.analysis", "leaderboard", "--help"], capture_output=True,
                         text=True, cwd=Path(__file__).parent)
    assert out.returncode == 0 and "--out" in out.stdout


# a fixture with known values: method -> task -> per-seed returned scores (hand-computed figures below)
KNOWN = {"alpha": {"hopper": [0.2, 0.5, 0.9], "ant": [0.1, 0.3, 0.2]},
         "beta": {"hopper": [0.6, 0.9, 1.2], "ant": [0.4, 0.8, 0.5]}}


def _known_runs(root):
    import json

    for method, tasks in KNOWN.items():
        for task, scores in tasks.items():
            for seed, score in enumerate(scores):
                run = write_run(root, method, "mujoco", task, seed)
                result = json.loads((run / "result.json").read_text())
                result.update(returned_score=score, returned_score_per_seed=[score])
                (run / "result.json").write_text(json.dumps(result))
    return root


def _parse_interval(cell: str) -> tuple[float, float, float]:
    import re

    m = re.fullmatch(r"(-?[\d.]+) \[(-?[\d.]+), (-?[\d.]+)\]", cell)
    assert m, cell
    return float(m[1]), float(m[2]), float(m[3])


def test_leaderboard_numbers_match_hand_computed_values(tmp_path):
    import numpy as np
    from scipy import stats

    lb = _build(_known_runs(tmp_path / "runs"), figures=False)
    table = lb.tables["mujoco"].set_index("method")
    expected = {  # mean over tasks of per-task means; IQM and optimality gap over the 6 pooled runs
        "alpha": {"mean": (0.5333333 + 0.2) / 2, "IQM": "0.300", "opt. gap": "0.633"},
        "beta": {"mean": (0.9 + 0.5666667) / 2, "IQM": "0.700", "opt. gap": "0.300"},
    }
    for method, want in expected.items():
        row = table.loc[method]
        assert row["mean [95% BCa]"].endswith(" (3 seeds < 5: about the seeds' range)")
        est, lo, hi = _parse_interval(row["mean [95% BCa]"].removesuffix(" (3 seeds < 5: about the seeds' range)"))
        assert est == pytest.approx(want["mean"], abs=5e-4)
        # the bounds: scipy's BCa over seeds resampled within each task, computed here on its own
        a, h = (np.array(KNOWN[method][t]) for t in ("ant", "hopper"))  # the table orders tasks by name
        ref = stats.bootstrap((a, h), lambda x, y, axis=-1: (x.mean(axis=axis) + y.mean(axis=axis)) / 2,
                              method="BCa", n_resamples=300, rng=0, paired=False, vectorized=True)
        assert (lo, hi) == pytest.approx(tuple(ref.confidence_interval), abs=5e-4)
        assert lo < est < hi
        assert (row["IQM"], row["opt. gap"]) == (want["IQM"], want["opt. gap"])
        assert (row["tasks"], row["seeds"]) == (2, "3")
    elo_column = next(c for c in table.columns if c.startswith("Elo"))
    elo = {m: table.loc[m, elo_column] for m in KNOWN}
    assert float(elo["beta"].split()[0]) > 1500 > float(elo["alpha"].split()[0])  # beta wins 5 of the 6 pairs
    # three seeds a cell: resamples that separate the two methods are too many for an interval to mean anything
    assert all(" (not identifiable: " in cell and "[" not in cell for cell in elo.values())
