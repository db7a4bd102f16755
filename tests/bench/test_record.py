"""bench/record.py: every bench appends one dated row of context and figures to bench/results/<bench>.csv."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import record  # noqa: E402


def _rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


@pytest.fixture
def results(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("BIRD_BENCH_RESULTS", str(tmp_path))
    return tmp_path


def test_append_writes_the_context_then_the_figures_to_the_benchs_file(results):
    started = record.begin(["/x/bench/bench_demo.py", "--repeats", "2"])
    path = record.append("demo", {"raw_s": 1.23456789, "ratio": 0.5, "note": None}, started)
    assert path == results / "demo.csv"
    header, (row,) = _rows(path)
    assert header == [*record.CONTEXT, "raw_s", "ratio", "note"]
    assert row["raw_s"] == "1.23457" and row["ratio"] == "0.5" and row["note"] == ""
    assert row["command"] == "python /x/bench/bench_demo.py --repeats 2" and row["date"] == started["date"]
    assert row["commit"] and row["machine"].split()[1] == "cores," and float(row["load_end"]) >= 0


def test_a_bench_run_from_the_checkout_is_named_by_its_path_in_it(results):
    started = record.begin([str(record.ROOT / "bench" / "bench_demo.py"), "--x", "a b"])
    assert started["command"] == "python bench/bench_demo.py --x 'a b'"


def test_a_new_figure_widens_the_header_and_older_rows_leave_it_empty(results):
    record.append("demo", {"a": 1})
    record.append("demo", {"a": 2, "b": 3})
    record.append("demo", {"b": 4})
    header, rows = _rows(results / "demo.csv")
    assert header == [*record.CONTEXT, "a", "b"]
    assert [(r["a"], r["b"]) for r in rows] == [("1", ""), ("2", "3"), ("", "4")]


def test_a_figure_named_like_a_context_column_is_refused(results):
    with pytest.raises(ValueError, match=r"\['commit'\] are context columns"):
        record.append("demo", {"commit": "abc", "x": 1})
    assert not (results / "demo.csv").exists()


def test_rows_go_to_bench_results_when_no_folder_is_named(monkeypatch):
    monkeypatch.delenv("BIRD_BENCH_RESULTS", raising=False)
    assert record.results_dir() == record.ROOT / "bench" / "results"
