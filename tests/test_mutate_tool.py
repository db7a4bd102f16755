"""tools/mutate.py and its parts (tools/mutation/): a stored run whose source changed is marked stale, notes that
explain no survivor are listed, and an incremental run (--changed) re-checks exactly what a change can affect."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import mutate  # noqa: E402
from mutation import incremental, modules, report, staging  # noqa: E402

SURVIVOR = {"key": "bird.m.x_f__mutmut_1", "function": "f", "status": "survived", "removed": "a = 1", "added": "a = 2"}


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A repository of one module's source file, with the report's files in tmp_path."""
    table = {"ROOT": tmp_path, "REPORT": tmp_path / "mutation.md", "SURVIVORS": tmp_path / "survivors.md",
             "NOTES": tmp_path / "notes.toml",
             "MODULES": {"m": modules.Module(("bird/m.py",), ("tests/test_m.py::test_f",))}}
    # each part took its names from mutation.modules when imported: set them wherever they are
    for part in (modules, staging, incremental, report, mutate):
        for name, value in table.items():
            if hasattr(part, name):
                monkeypatch.setattr(part, name, value)
    (tmp_path / "bird").mkdir()
    (tmp_path / "bird" / "m.py").write_text("def f():\n    a = 1\n")
    return tmp_path


def _entry() -> dict:
    return {"files": ["bird/m.py"], "tests": ["tests/test_m.py::test_f"], "date": "2026-12-05", "wall_s": 1,
            "finished": True, "total": 2, "counts": {"killed": 1, "survived": 1}, "survivors": [dict(SURVIVOR)],
            "command": "python tools/mutate.py m", "sha256": staging._hashes(("bird/m.py", "tests/test_m.py::test_f"))}


def test_a_run_is_marked_stale_once_its_source_changes(repo):
    entry = _entry()
    assert entry["sha256"]["tests/test_m.py"] == "missing"  # the test file, by its path without ::test_f
    report.write_report({"m": entry})
    assert report.stale(entry) == [] and "stale" not in report.REPORT.read_text()
    (repo / "bird" / "m.py").write_text("def f():\n    a = 3\n")
    report.write_report({"m": entry})
    assert report.stale(entry) == ["bird/m.py"]
    row = next(line for line in report.REPORT.read_text().splitlines() if line.startswith("| m |"))
    assert "stale (source changed since the run)" in row


def test_a_module_below_the_target_is_flagged_in_its_row(repo):
    report.write_report({"m": _entry()})  # 1 killed of 2, its survivor unexplained: 50 %
    row = next(line for line in report.REPORT.read_text().splitlines() if line.startswith("| m |"))
    assert "**50.0%** below the 85% target" in row
    report.write_report({"m": {**_entry(), "counts": {"killed": 2}, "survivors": []}})
    row = next(line for line in report.REPORT.read_text().splitlines() if line.startswith("| m |"))
    assert "**100.0%**" in row and "below" not in row


def test_a_run_recorded_without_hashes_is_stale_once_git_changed_its_source_on_a_later_day(repo):
    import subprocess

    entry = _entry()
    del entry["sha256"]
    assert report.stale(entry) == []  # not a git checkout: unknown, not called stale

    def commit(day: str) -> None:
        env = {**os.environ, "GIT_AUTHOR_DATE": f"{day}T12:00:00", "GIT_COMMITTER_DATE": f"{day}T12:00:00", "HOME": str(repo),
               "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
        subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
        subprocess.run(["git", "commit", "-qm", day], cwd=repo, check=True, env=env)

    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    commit("2026-12-05")  # the run's day
    assert report.stale(entry) == []
    (repo / "bird" / "m.py").write_text("def f():\n    a = 3\n")
    commit("2026-12-06")
    assert report.stale(entry) == ["bird/m.py"]


def test_notes_that_match_no_survivor_are_listed_as_unused(repo):
    report.NOTES.write_text('[[note]]\nmodule = "m"\nfunction = "f"\nadded = "a = 2"\nkind = "equivalent"\nwhy = "x"\n'
                            '[[note]]\nmodule = "m"\nfunction = "f"\nadded = "a = 9"\nkind = "equivalent"\nwhy = "y"\n'
                            '[[note]]\nmodule = "m"\nfunction = "g"\nadded = "a = 2"\nkind = "equivalent"\nwhy = "z"\n')
    results = {"m": _entry()}
    assert [(n["function"], n["added"]) for n in report.unused_notes(results, report._load_notes())] == [
        ("f", "a = 9"), ("g", "a = 2")]
    report.write_report(results)
    page = report.REPORT.read_text()
    assert "Unused notes" in page and "m: f: `a = 9`" in page and "m: g: `a = 2`" in page
    assert "m: f: `a = 2`" not in page


def _meta(codes: dict[str, int | None], hashes: dict[str, str]) -> dict:
    return {"exit_code_by_key": {f"bird.m.{k}": v for k, v in codes.items()}, "hash_by_function_name": hashes}


def test_an_incremental_run_rechecks_changed_new_and_surviving_mutants_and_keeps_the_other_kills():
    # 1 = killed, 0 = survived, 36 = timeout (killed), None = not checked: mutmut's verdict for a changed function,
    # and for every mutant once the module's test selection changed (x_k: a kill it forgot)
    before = {"bird/m.py": _meta({"x_f__mutmut_1": 1, "x_f__mutmut_2": 0, "x_g__mutmut_1": 1, "x_g__mutmut_2": 36,
                                  "x_h__mutmut_1": 36, "x_k__mutmut_1": 1}, {"x_f": "a", "x_g": "b", "x_h": "c",
                                                                            "x_k": "e"})}
    after = {"bird/m.py": _meta({"x_f__mutmut_1": 1, "x_f__mutmut_2": 0, "x_g__mutmut_1": None, "x_g__mutmut_2": None,
                                 "x_g__mutmut_3": None, "x_h__mutmut_1": 36, "x_k__mutmut_1": None,
                                 "x_new__mutmut_1": None}, {"x_f": "a", "x_g": "B", "x_h": "c", "x_k": "e", "x_new": "d"})}
    changed, rerun, kept = incremental._changed_plan(before, after)
    assert changed == {"bird.m.x_g", "bird.m.x_new"}
    assert rerun == {f"bird.m.{k}" for k in ("x_f__mutmut_2", "x_g__mutmut_1", "x_g__mutmut_2", "x_g__mutmut_3",
                                              "x_new__mutmut_1")}
    assert kept == {"bird.m.x_f__mutmut_1": 1, "bird.m.x_h__mutmut_1": 36, "bird.m.x_k__mutmut_1": 1}


def test_the_callers_of_a_changed_function_are_found_through_callers_of_callers(tmp_path):
    (tmp_path / "mutants").mkdir()
    calls = {"bird.m.x_g": ["bird.m.x_f", "bird.m.x_g"], "bird.m.x_f": ["bird.m.x_top"], "bird.m.x_h": ["bird.m.x_k"]}
    (tmp_path / "mutants" / "mutmut-stats.json").write_text(json.dumps({"function_dependencies": calls}))
    assert incremental._callers(tmp_path, {"bird.m.x_g"}) == {"bird.m.x_f", "bird.m.x_top"}


def test_an_incremental_stage_keeps_only_mutmuts_record_of_the_module_and_dates_its_mutants_old(tmp_path):
    module = modules.Module(("bird/m.py",), ())
    kept = ["mutants/mutmut-stats.json", "mutants/bird/m.py", "mutants/bird/m.py.meta", "mutants/bird/m.py.spans"]
    for rel in [*kept, "mutants/bird/other.py", "mutants/tests/test_m.py", "bird/m.py", "tests/test_m.py"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(rel)
    staging._clear_keeping_mutants(tmp_path, module)
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == sorted(kept)
    assert (tmp_path / "mutants/bird/m.py").stat().st_mtime == 0
    assert (tmp_path / "mutants/bird/m.py.meta").read_text() == "mutants/bird/m.py.meta"


def test_pruning_removes_exactly_the_unused_notes_and_keeps_the_header(repo):
    header = "# notes: kept as written\n\n"
    used = '[[note]]\nmodule = "m"\nfunction = "f"\nadded = "a = 2"\nkind = "equivalent"\nwhy = "x"\n\n'
    unused = '[[note]]\nmodule = "m"\nfunction = "f"\nadded = "a = 9"\nkind = "equivalent"\nwhy = "y"\n\n'
    report.NOTES.write_text(header + unused + used + unused.replace("a = 9", "a = 8"))
    assert report.prune_notes({"m": _entry()}) == 2
    assert report.NOTES.read_text() == header + used


def test_prune_notes_and_report_run_no_module(repo, monkeypatch):
    ran = []
    monkeypatch.setattr(mutate, "run_module", lambda *a, **k: ran.append(a) or {})
    monkeypatch.setattr(mutate, "run_changed", lambda *a, **k: ran.append(a) or {})
    results = repo / "results.json"
    results.write_text(json.dumps({"m": _entry()}))
    report.NOTES.write_text("# header\n")
    for flag in ("--prune-notes", "--report"):
        assert mutate.main([flag, "--results", str(results)]) == 0
    assert ran == []


def test_a_run_that_checked_no_mutant_keeps_the_stored_result_and_fails(repo, monkeypatch, capsys):
    """mutmut stops before its first mutant when the tests fail their clean run: no score to store."""
    none = {**_entry(), "counts": {"not checked": 2}, "survivors": [], "finished": False}
    monkeypatch.setattr(mutate, "run_module", lambda *a: none)
    monkeypatch.setattr(mutate, "STAGE", repo / "stage")
    (repo / "stage" / "m").mkdir(parents=True)
    (repo / "stage" / "m" / "mutmut.log").write_text("⠋ Running clean tests\n    done\nFailed to run clean test\n⠙ x\n")
    results = repo / "results.json"
    results.write_text(json.dumps({"m": _entry()}))
    assert mutate.main(["m", "--results", str(results)]) == 1
    assert json.loads(results.read_text()) == {"m": _entry()}
    assert "m: no mutant was checked (mutmut said: Failed to run clean test); the stored result is kept" in \
        capsys.readouterr().out
    assert report._score(none, "m", []) == (0, 0, 0, 0.0)  # and, stored by hand, it would score nothing


def test_a_run_whose_stats_collection_failed_keeps_the_stored_result_though_some_mutants_were_checked_before(
        repo, monkeypatch, capsys):
    earlier = {**_entry(), "counts": {"killed": 1, "not checked": 1}, "survivors": []}  # the stage's old verdicts
    monkeypatch.setattr(mutate, "run_module", lambda *a: earlier)
    monkeypatch.setattr(mutate, "STAGE", repo / "stage")
    (repo / "stage" / "m").mkdir(parents=True)
    (repo / "stage" / "m" / "mutmut.log").write_text("Found 16 new tests, rerunning stats collection\n\n"
                                                     "failed to collect stats. runner returned 1\n")
    results = repo / "results.json"
    results.write_text(json.dumps({"m": _entry()}))
    assert mutate.main(["m", "--results", str(results), "--resume"]) == 1
    assert json.loads(results.read_text()) == {"m": _entry()}
    assert "no mutant was checked (mutmut said: failed to collect stats)" in capsys.readouterr().out


def test_a_resume_refuses_a_stage_whose_code_around_the_module_changed(repo, monkeypatch):
    monkeypatch.setattr(staging, "LAYOUT", {"bird": "bird"})
    monkeypatch.setattr(staging, "STAGE", repo / "stage")
    (repo / "bird" / "other.py").write_text("X = 1\n")
    mutants = repo / "stage" / "m" / "mutants" / "bird"
    mutants.mkdir(parents=True)
    (mutants / "m.py").write_text("# the trampolined module: its source copy is compared instead\n")
    (mutants / "other.py").write_text("X = 1\n")
    (repo / "stage" / "m" / "bird").mkdir()
    (repo / "stage" / "m" / "bird" / "m.py").write_text((repo / "bird" / "m.py").read_text())
    assert staging.stale_copies(repo / "stage" / "m", modules.MODULES["m"]) == []
    (repo / "bird" / "m.py").write_text("def f():\n    a = 5\n")  # the module itself changed
    assert staging.stale_copies(repo / "stage" / "m", modules.MODULES["m"]) == ["bird/m.py"]
    (repo / "bird" / "other.py").write_text("X = 2\n")
    (repo / "bird" / "new.py").write_text("Y = 1\n")
    assert staging.stale_copies(repo / "stage" / "m", modules.MODULES["m"]) == ["bird/m.py", "bird/new.py",
                                                                                "bird/other.py"]
    with pytest.raises(SystemExit, match=r"--resume m: 3 source file\(s\) changed .*--changed"):
        staging.run_module("m", 10.0, 1, resume=True)


def test_a_changed_run_goes_to_the_incremental_run_and_any_other_to_a_full_or_resumed_one(repo, monkeypatch):
    calls = []
    monkeypatch.setattr(mutate, "run_module", lambda *a: calls.append(("full", *a)) or _entry())
    monkeypatch.setattr(mutate, "run_changed", lambda *a: calls.append(("changed", *a)) or _entry())
    results = repo / "results.json"
    for flags in ([], ["--resume"], ["--changed"], ["--resume", "--changed"]):
        assert mutate.main(["m", "--results", str(results), "--timeout", "9", "--max-children", "3", *flags]) == 0
    assert calls == [("full", "m", 9.0, 3, False), ("full", "m", 9.0, 3, True), ("changed", "m", 9.0, 3),
                     ("changed", "m", 9.0, 3)]
    assert list(json.loads(results.read_text())) == ["m"]


def test_mutmuts_last_words_leave_its_spinner_lines_out(tmp_path):
    (tmp_path / "mutmut.log").write_text("⠋ Running stats\n    done\nsomething else went wrong\n⠙ Running stats\n\n")
    assert staging.last_words(tmp_path) == "mutmut said: something else went wrong"
    assert staging.last_words(tmp_path, "failed to collect stats") == "mutmut said: failed to collect stats"
    assert staging.last_words(tmp_path / "none") == "mutmut wrote no log"
