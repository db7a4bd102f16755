"""How two readings of a run are compared (bird/bundle/compare.py): what is read and what is left out as execution,
where a difference is located and named, and which differences are within a metric's tolerance (replays of real
runs: test_bundle_unit.py, test_bundle_tampering.py)."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

from bird.bundle.compare import (
    DEFAULT_TOLERANCE,
    EXECUTION_FILES,
    Difference,
    Tolerance,
    compare_runs,
    read_file,
    read_run,
)


def test_a_tolerance_is_absolute_plus_relative_to_the_recorded_value():
    t = Tolerance(rtol=0.1, atol=0.5)
    assert t.close(10.0 + 1.5, 10.0) and not t.close(10.0 + 1.5001, 10.0)
    assert t.close(-1.4, -2.0) and not t.close(0.0, -2.0)  # relative to |b|
    assert Tolerance().close(1.0, 1.0) and not Tolerance().close(1.0, 1.0 + 1e-15)
    assert Tolerance().close(math.nan, math.nan) and not Tolerance(atol=1e9).close(math.nan, 1.0)
    assert not Tolerance(atol=1e9).close(1.0, math.nan)


def test_counts_are_exact_and_other_numbers_close_to_a_millionth():
    assert DEFAULT_TOLERANCE["env_steps"] == Tolerance() and DEFAULT_TOLERANCE["iteration"] == Tolerance()
    assert DEFAULT_TOLERANCE["*"] == Tolerance(rtol=1e-6, atol=1e-9) == DEFAULT_TOLERANCE["returned_score"]


def _run(root: Path, files: dict[str, bytes | str]) -> Path:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return root


def test_reading_a_run_leaves_out_the_execution_records_and_media_unless_asked(tmp_path):
    files = {name: "{}" for name in EXECUTION_FILES if "." in name[1:]}
    files.update({"wandb/run/x.json": "{}", "tensorboard/e": "x", ".hydra/config.yaml": "a: 1", "a.log": "x",
                  "b.tmp": "x", "c.pkl": "x", "d.zip": "x", "candidates/it1-c0/events.jsonl": "{}\n",
                  "clip.mp4": b"\xff\1", "frame.png": b"\0\2", "reward.py": "def f(): ...\n"})
    run = _run(tmp_path, files)
    assert sorted(read_run(run)) == ["candidates/it1-c0/events.jsonl", "reward.py"]
    assert sorted(read_run(run, media=True)) == ["candidates/it1-c0/events.jsonl", "clip.mp4", "frame.png",
                                                 "reward.py"]
    assert read_run(run, media=True)["clip.mp4"] == "sha256:" + hashlib.sha256(b"\xff\1").hexdigest()


def test_execution_keys_are_left_out_of_json_records_at_their_depth(tmp_path):
    run = _run(tmp_path, {
        "result.json": json.dumps({"returned_score": 0.5, "wall_s": 3, "cost_usd": 1, "llm_cached_calls": 2,
                                   "resumes": [], "determinism": {}, "videos": [], "render_s": 1,
                                   "nested": {"wall_s": 9, "latency_s": 2, "items": [{"render_s": 1, "k": 1}]}}),
        "candidates/it1-c0/candidate.json": json.dumps({"fitness": 1.0, "wall_s": 2, "llm": {
            "latency_s": 1, "cached": True, "cost_usd": 0.1, "attempts": 2, "uncached_cost_usd": 0.2, "model": "m"}}),
        "verify.json": json.dumps({"inactive_layers": ["x"], "ok": True}),
        "lines.jsonl": json.dumps({"latency_s": 1, "a": 1}) + "\n" + json.dumps({"b": [{"render_s": 2}]}) + "\n"})
    got = read_run(run)
    assert got["result.json"] == {"returned_score": 0.5, "nested": {"wall_s": 9, "items": [{"k": 1}]}}
    assert got["candidates/it1-c0/candidate.json"] == {"fitness": 1.0, "llm": {"model": "m"}}
    assert got["verify.json"] == {"ok": True}
    assert got["lines.jsonl"] == [{"a": 1}, {"b": [{}]}]


def test_the_journal_contributes_the_requests_made_in_any_order(tmp_path):
    calls = [{"purpose": "reward", "iteration": 2, "key": "b", "latency_s": 3.0, "cost_usd": 1},
             {"purpose": "reward", "iteration": 1, "key": "a", "model": "m", "sample_index": 0}]
    run = _run(tmp_path, {"llm_calls.jsonl": "".join(json.dumps(c) + "\n" for c in calls)})
    got = read_run(run)["llm_calls.jsonl"]
    assert len(got) == 2 and got == sorted(got)
    assert json.loads(got[0])["key"] == "a" and "latency_s" not in json.loads(got[1])
    assert set(json.loads(got[0])) == {"purpose", "iteration", "sample_index", "provider", "model", "key", "error",
                                       "input_tokens", "output_tokens", "finish_reason"}
    _run(tmp_path, {"llm_calls.jsonl": "[1]\n"})
    with pytest.raises(ValueError, match="a journal line is not a JSON object"):
        read_run(tmp_path)


def test_tables_text_and_arrays_are_read_by_value(tmp_path):
    np.savez(tmp_path / "a.npz", w=np.arange(3.0), b=np.zeros((2, 2), dtype=np.int32))
    run = _run(tmp_path, {"curve.csv": "env_steps,score,name\n1,0.5,x\n2,nan,y\n", "empty.csv": "",
                          "reward.py": "x = 1\n", "blob.bin": b"\xff\xfe"})
    got = read_run(run, media=True)
    assert got["curve.csv"] == {"header": ["env_steps", "score", "name"], "rows": [[1.0, 0.5, "x"], [2.0, got[
        "curve.csv"]["rows"][1][1], "y"]]} and math.isnan(got["curve.csv"]["rows"][1][1])
    assert got["empty.csv"] == {"header": [], "rows": []}
    assert got["reward.py"] == "x = 1\n" and got["blob.bin"] == "sha256:" + hashlib.sha256(b"\xff\xfe").hexdigest()
    digest = hashlib.sha256(np.arange(3.0).tobytes()).hexdigest()
    assert got["a.npz"] == {"b": "int32[2, 2]:" + hashlib.sha256(np.zeros((2, 2), np.int32).tobytes()).hexdigest(),
                            "w": f"float64[3]:{digest}"}
    assert list(got["a.npz"]) == ["b", "w"]


def test_a_file_read_is_one_bird_reads_safely(tmp_path):
    (tmp_path / "outside.json").write_text("{}")
    run = tmp_path / "run"
    run.mkdir()
    (run / "result.json").symlink_to(tmp_path / "outside.json")
    with pytest.raises(OSError, match="leaves"):
        read_file(run, "result.json")
    (run / "deep.json").write_text("[" * 100 + "]" * 100)
    with pytest.raises(ValueError, match="nested deeper"):
        read_file(run, "deep.json")


# --- comparing ----------------------------------------------------------------------------------------------------
def _paths(comparison) -> list[str]:
    return [d.path for d in comparison.differences]


def test_identical_readings_are_identical():
    a = {"result.json": {"x": 1, "y": [1.0, math.nan]}, "reward.py": "x"}
    c = compare_runs(a, json.loads(json.dumps(a)))
    assert c.identical and c.within_tolerance and c.differences == []


def test_files_on_one_side_only_are_listed_and_never_within_tolerance():
    c = compare_runs({"a": 1, "c": 1, "b": 1}, {"b": 1, "e": 1, "d": 1})
    assert (c.only_recorded, c.only_replayed) == (["a", "c"], ["d", "e"])
    assert not c.identical and not c.within_tolerance
    assert not compare_runs({"a": 1}, {}).within_tolerance and not compare_runs({}, {"a": 1}).within_tolerance


def test_a_difference_is_located_by_file_key_path_and_index():
    a = {"r.json": {"k": {"x": [1, 2, 3], "s": "a"}, "gone": 1}}
    b = {"r.json": {"k": {"x": [1, 5], "s": "b"}, "new": 2}}
    c = compare_runs(a, b)
    assert [(d.path, d.recorded, d.replayed) for d in c.differences] == [
        ("r.json:k.x[len]", 3, 2), ("r.json:k.x[1]", 2, 5), ("r.json:k.s", "a", "b"), ("r.json:gone", 1, "<absent>"),
        ("r.json:new", "<absent>", 2)]


def test_types_matter_except_between_numbers():
    assert compare_runs({"f": {"a": 1}}, {"f": {"a": 1.0}}).identical
    assert not compare_runs({"f": {"a": True}}, {"f": {"a": 1}}).identical
    assert not compare_runs({"f": {"a": "1"}}, {"f": {"a": 1}}).identical
    assert not compare_runs({"f": [1]}, {"f": {"0": 1}}).identical
    assert not compare_runs({"f": {"a": math.nan}}, {"f": {"a": 1.0}}).identical


def test_numbers_within_their_metrics_tolerance_are_marked_so_and_counts_are_exact():
    a = {"result.json": {"returned_score": 0.5, "env_steps": 100, "iteration": 2, "other": 1.0, "name": "x"}}
    b = {"result.json": {"returned_score": 0.5 + 1e-9, "env_steps": 101, "iteration": 2.0000001, "other": 1.1,
                         "name": "y"}}
    c = compare_runs(a, b)
    marks = {d.path.split(":")[1]: d.within_tolerance for d in c.differences}
    assert marks == {"returned_score": True, "env_steps": False, "iteration": False, "other": False, "name": False}
    assert not c.within_tolerance and not c.identical
    assert compare_runs({"f": {"score": 1.0}}, {"f": {"score": 1.0 + 1e-7}}).within_tolerance
    loose = compare_runs(a, b, {"other": Tolerance(atol=0.2), "env_steps": Tolerance(atol=1)})
    assert {d.path.split(":")[1]: d.within_tolerance for d in loose.differences}["other"] is True
    assert {d.path.split(":")[1]: d.within_tolerance for d in loose.differences}["env_steps"] is True


def test_a_metric_is_the_last_key_of_the_path_without_its_index():
    c = compare_runs({"f.json": {"a": {"env_steps": [1, 2]}}}, {"f.json": {"a": {"env_steps": [1, 2.0000001]}}})
    assert _paths(c) == ["f.json:a.env_steps[1]"] and not c.differences[0].within_tolerance
    c = compare_runs({"f.json": {"a": {"x": [1, 2]}}}, {"f.json": {"a": {"x": [1, 2.0000001]}}})
    assert c.within_tolerance


def test_the_metric_of_a_path_is_read_from_the_path_alone():
    from bird.bundle.compare import _metric

    assert [_metric(p) for p in ("f.json:a.env_steps[1]", "f.json:score", "f.json:x[0][2]", "rows")] == [
        "env_steps", "score", "x", "rows"]


def _table(header, *rows):
    return {"header": header, "rows": [list(r) for r in rows]}


def test_tables_are_compared_cell_by_cell_under_their_column_names():
    a = {"curve.csv": _table(["env_steps", "score"], (1.0, 0.5), (2.0, 0.6))}
    b = {"curve.csv": _table(["env_steps", "score"], (1.0, 0.5 + 1e-9), (3.0, 0.6))}
    c = compare_runs(a, b)
    assert [(d.path, d.within_tolerance) for d in c.differences] == [("curve.csv:row 0:score", True),
                                                                     ("curve.csv:row 1:env_steps", False)]


def test_a_table_with_other_columns_is_one_difference_and_other_row_counts_are_named():
    c = compare_runs({"t.csv": _table(["a"], (1.0,))}, {"t.csv": _table(["b"], (2.0,))})
    assert [(d.path, d.recorded, d.replayed) for d in c.differences] == [("t.csv:header", ["a"], ["b"])]
    c = compare_runs({"t.csv": _table(["a"], (1.0,), (2.0,))}, {"t.csv": _table(["a"], (1.5,))})
    assert [(d.path, d.recorded, d.replayed) for d in c.differences] == [("t.csv:rows", 2, 1), ("t.csv:row 0:a", 1.0,
                                                                                                   1.5)]
    assert not c.differences[0].within_tolerance


def test_cells_beyond_the_header_are_named_by_their_index():
    c = compare_runs({"t.csv": _table(["a"], (1.0, "x"))}, {"t.csv": _table(["a"], (1.0, "y"))})
    assert _paths(c) == ["t.csv:row 0:1"]


def test_a_difference_prints_both_sides_shortened():
    assert str(Difference("f:a", 1, 2)) == "f:a: recorded 1, replayed 2"
    long = "x" * 200
    assert str(Difference("f", long, "y")) == f"f: recorded {repr(long)[:117]}..., replayed 'y'"
    assert len(repr(long)[:117] + "...") == 120
    exact = "y" * 118  # its repr has 120 characters: shown whole
    assert str(Difference("f", exact, 1)) == f"f: recorded {exact!r}, replayed 1"


def test_a_value_whose_repr_passes_one_hundred_and_twenty_characters_is_cut():
    over = "y" * 119  # its repr has 121 characters
    assert str(Difference("f", over, 1)) == f"f: recorded {repr(over)[:117]}..., replayed 1"


def test_an_array_file_may_be_a_link_to_another_file_of_the_run(tmp_path):
    np.savez(tmp_path / "a.npz", w=np.arange(2.0))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.npz").symlink_to(tmp_path / "a.npz")  # inside the run, outside its own folder
    assert read_file(tmp_path, "sub/b.npz") == read_file(tmp_path, "a.npz")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "c.npz").symlink_to(tmp_path / "a.npz")
    with pytest.raises(OSError, match="leaves"):
        read_file(tmp_path / "run", "c.npz")


def test_the_metric_of_a_list_in_a_list_is_its_key():
    c = compare_runs({"f.json": {"env_steps": [[1, 2]]}}, {"f.json": {"env_steps": [[1, 2.0000001]]}})
    assert _paths(c) == ["f.json:env_steps[0][1]"] and not c.within_tolerance


def test_a_row_with_other_cell_counts_is_a_difference():
    c = compare_runs({"t.csv": _table(["a", "b"], (1.0, 2.0))}, {"t.csv": _table(["a", "b"], (1.0,))})
    assert [(d.path, d.recorded, d.replayed, d.within_tolerance) for d in c.differences] == [
        ("t.csv:row 0:cells", 2, 1, False)]
    assert not c.identical and not c.within_tolerance


def test_a_key_on_one_side_only_is_located_at_its_depth():
    c = compare_runs({"r.json": {"k": {"a": 1}}}, {"r.json": {"k": {}}})
    assert [(d.path, d.recorded, d.replayed) for d in c.differences] == [("r.json:k.a", 1, "<absent>")]


def test_a_list_against_another_type_is_one_difference_at_its_path():
    c = compare_runs({"f": [1]}, {"f": {"0": 1}})
    assert [(d.path, d.recorded, d.replayed) for d in c.differences] == [("f", [1], {"0": 1})]


def test_a_journal_line_that_is_not_an_object_is_refused_by_name(tmp_path):
    (tmp_path / "llm_calls.jsonl").write_text('{"key": "a"}\n"text"\n')
    with pytest.raises(ValueError, match="^a journal line is not a JSON object$"):
        read_run(tmp_path)


def test_a_record_may_be_a_link_to_another_file_of_the_run(tmp_path):
    (tmp_path / "a.json").write_text('{"x": 1}')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.json").symlink_to(tmp_path / "a.json")  # inside the run, outside its own folder
    assert read_file(tmp_path, "sub/b.json") == {"x": 1}
