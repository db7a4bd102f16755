"""docs/performance.md and the README's ratios are generated from bench/results/*.csv (tools/performance.py), and
stay in step with them."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import performance  # noqa: E402


def test_performance_page_and_readme_ratios_are_in_step_with_bench_results():
    assert performance.main(["--check"]) == 0, "run: python tools/performance.py"


def test_every_results_file_has_its_section_and_no_commit_on_the_page():
    page = performance.page()
    for csv_file in (ROOT / "bench" / "results").glob("*.csv"):
        assert f"\n## {csv_file.stem}\n" in page, csv_file.name
    assert "| commit |" not in page and "compared_commits" not in page


def test_the_headline_takes_the_latest_row_with_a_ratio(tmp_path, monkeypatch):
    (tmp_path / "overhead.csv").write_text("date,machine,load,commit,command,env,ratio\n"
                                           "2026-12-01,m,1.0,abc1234,c,mujoco/hopper,0.9\n"
                                           "2026-12-03,m,2.0,abc1235,c,mujoco/hopper,\n"
                                           "2026-12-02,m,3.5,abc1236,c,mujoco/swimmer,1.2\n")
    monkeypatch.setattr(performance, "RESULTS", tmp_path)
    table = performance.headline()
    assert "**1.2**" in table and "(env mujoco/swimmer)" in table and "2026-12-02 (3.5)" in table
    assert "0.9" not in table and "abc123" not in table
