import subprocess
import sys
import warnings
from pathlib import Path

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
