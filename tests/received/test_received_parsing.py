"""Run directories and sweep folders someone else made are parsed within bounds: a forged run is skipped with its
reason on the leaderboard page, never stopping it; `bird.status` counts a sweep's cells without listing them and
does not wait on a FIFO. Files that would exhaust memory are tried in a child process under a memory limit. The
positive controls are the leaderboard and the status of real recorded runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from bird.analysis.report import build_leaderboard, write_leaderboard
from bird.files import BoundedParseError, loads
from bird.status import summarise, sweep_cells

ROOT = Path(__file__).resolve().parents[2]
SMOKE_RUNS = ROOT / "tests" / "analysis" / "fixtures" / "smoke_runs"
ONE_RUN = SMOKE_RUNS / "mujoco-inverted_pendulum" / "eureka-s0"
FAST = {"n_resamples": 200, "bt_resamples": 20, "curve_resamples": 50, "figures": False}
LIMITED = "import resource; resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30)); "


def _forged(tmp_path: Path, edit) -> Path:
    """A copy of a real run (a fifth seed) whose files `edit(run, result)` forges."""
    run = tmp_path / "forged" / "eureka-s9"
    shutil.copytree(ONE_RUN, run)
    result = json.loads((run / "result.json").read_text())
    result["seed"] = 9
    (run / "result.json").write_text(json.dumps(result))
    edit(run, result)
    return run


def _set(**fields):
    def edit(run: Path, result: dict) -> None:
        (run / "result.json").write_text(json.dumps({**result, **fields}))
    return edit


def _raw(name: str, text: str):
    def edit(run: Path, result: dict) -> None:
        (run / name).unlink()
        (run / name).write_text(text)
    return edit


def _candidate(**fields):
    def edit(run: Path, result: dict) -> None:
        path = run / "candidates" / "it1-c0" / "candidate.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **fields}))
    return edit


FORGERIES = {
    "deep JSON": (_raw("result.json", '{"a":' * 100_000 + "1" + "}" * 100_000), "nested deeper than 64"),
    "a string where the iteration list is expected": (_set(iterations="abc"), "iterations is not a JSON array"),
    "an iteration that is not a number": (_set(iterations=[{"iteration": "one"}]), "lacks an integer 'iteration'"),
    "a 400-digit number": (_raw("result.json", json.dumps({"env_steps": 1}).replace("1", "9" * 400)),
                           "integer of 400 digits"),
    "a 300-character method name": (_set(method="m" * 300), "not a name of 1 to 64 printable characters"),
    "a score of 1e308": (_set(returned_score=1e308), "1e+308 is beyond"),
    "a fitness of Infinity": (_candidate(fitness=float("inf")), "inf is beyond"),
    "a control character in a task name": (_set(task="hopper\x1b[2J"), "printable characters"),
    "tokens that are a list": (_set(tokens=[1, 2]), "tokens is not a JSON object"),
    "an incumbent id that is a list": (_set(iterations=[{"iteration": 1, "returned_so_far": ["it1-c0"]}]),
                                       "malformed record (TypeError: unhashable type"),
    "clips that are a list of numbers": (_set(videos={"clips": [1, 2]}), None),
    "a candidate that is a FIFO": (lambda run, _: ((run / "candidates" / "it1-c0" / "candidate.json").unlink(),
                                                   os.mkfifo(run / "candidates" / "it1-c0" / "candidate.json")),
                                   "not a regular file"),
}


@pytest.mark.parametrize("forgery", FORGERIES)
def test_a_forged_run_directory_is_skipped_with_its_reason_and_the_page_goes_on(tmp_path, forgery):
    edit, reason = FORGERIES[forgery]
    forged = _forged(tmp_path, edit)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        board = build_leaderboard([SMOKE_RUNS, forged.parent], **FAST)
        md = write_leaderboard(board, tmp_path / "page").read_text()
    assert (tmp_path / "page" / "leaderboard.html").is_file()
    if reason is None:  # a harmless oddity: the run counts, the clip is left out
        assert "5 runs; 2 methods; 1 task." in md
        return
    assert "4 runs; 2 methods; 1 task." in md
    skipped = next(line for line in md.splitlines() if line.startswith("- Skipped 1 run directories"))
    assert str(forged.name) in skipped and reason in skipped, skipped


def test_the_leaderboard_of_real_runs_reads_every_one(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        md = write_leaderboard(build_leaderboard([SMOKE_RUNS], **FAST), tmp_path / "page").read_text()
    assert "4 runs; 2 methods; 1 task." in md and "Skipped" not in md
    assert (tmp_path / "page" / "runs" / "eureka" / "mujoco-inverted_pendulum" / "seed0" / "result.json").is_file()


def test_a_result_linked_to_dev_zero_or_over_its_cap_is_skipped_without_reading_it(tmp_path):
    zero = _forged(tmp_path, lambda run, _: ((run / "result.json").unlink(),
                                             (run / "result.json").symlink_to("/dev/zero")))
    big = tmp_path / "big" / "eureka-s8"
    shutil.copytree(ONE_RUN, big)
    with open(big / "result.json", "ab") as fh:  # 65 MiB: one more than a result.json may hold
        fh.truncate(65 << 20)
    code = (LIMITED + "import sys, warnings; warnings.simplefilter('ignore'); from bird.analysis import read_runs; "
            "c = read_runs(sys.argv[1:]); print(len(c.runs)); print('\\n'.join(s.reason for s in c.skipped))")
    proc = subprocess.run([sys.executable, "-c", code, str(SMOKE_RUNS), str(zero), str(big)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    count, *reasons = proc.stdout.splitlines()
    assert count == "4"
    assert any("is a link that leaves" in r for r in reasons) and any("may hold at most" in r for r in reasons)


def _sweep(tmp_path: Path, multirun: str) -> Path:
    sweep = tmp_path / "sweep"
    (sweep / "a").mkdir(parents=True)
    (sweep / "multirun.yaml").write_text(multirun)
    (sweep / "a" / "status.json").write_text(json.dumps({"state": "running", "env_steps": 10, "llm_calls": 2}))
    return sweep


def test_status_counts_a_50000_squared_sweep_without_listing_it_and_does_not_wait_on_a_fifo(tmp_path):
    sweep = _sweep(tmp_path, "hydra:\n  sweeper:\n    params:\n      a: range(0,50000)\n      b: range(0,50000)\n")
    (sweep / "b").mkdir()
    os.mkfifo(sweep / "b" / "status.json")
    code = LIMITED + "import sys; from bird.status import main; sys.exit(main(sys.argv[1:]))"
    runs = [sys.executable, "-c", code, str(sweep)]
    proc = subprocess.run(runs, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "2500000000 cells · 0 completed · 1 running · 1 failed · 2499999998 not started" in proc.stdout
    listed = json.loads(subprocess.run([*runs, "--json", "--all"], capture_output=True, text=True, timeout=120).stdout)
    assert "is not a regular file (a FIFO)" in listed[0]["runs"][1]["error"]


@pytest.mark.parametrize(("multirun", "cells"), [
    ("hydra:\n  sweeper:\n    params:\n      seed: range(3)\n  overrides:\n    task:\n    - method=eureka,card\n", 6),
    ("hydra:\n  sweeper:\n    params:\n      seed: range(0,10,4)\n      x: range(0.0,1.0,0.25)\n", 12),
    ("hydra:\n  sweeper:\n    params:\n      seed: 0,1\n  overrides:\n    task:\n    - seed=5\n", 1),
    ("hydra:\n  overrides:\n    task:\n    - method=glob(era_*)\n", 2),
])
def test_status_counts_choices_ranges_globs_and_a_key_given_twice(tmp_path, multirun, cells):
    assert sweep_cells(_sweep(tmp_path, multirun)) == cells


@pytest.mark.parametrize(("multirun", "why"), [
    ("a: &x [1, 2]\nb: *x\n", "alias"),
    ("hydra: [" * 200 + "]" * 200, "nested deeper"),
    ("hydra:\n  sweeper:\n    params:\n      x: interval(0,1)\n", "not a sweep the basic sweeper enumerates"),
    ("hydra:\n  overrides:\n    task: 7\n", "not a list of strings"),
    ("hydra:\n  overrides:\n    task:\n    - seed=" + ",".join(map(str, range(3000))) + "\n", "more than 10000 characters"),
])
def test_status_names_a_multirun_file_it_cannot_count_and_still_lists_the_runs(tmp_path, multirun, why):
    summary = summarise(_sweep(tmp_path, multirun))
    assert summary["running"] == 1 and summary["cells"] == 1 and why in summary["note"]


def test_status_of_real_recorded_runs(tmp_path):
    summary = summarise(SMOKE_RUNS)
    assert (summary["cells"], summary["completed"], summary["failed"]) == (4, 4, 0)
    assert summary["note"] is None and [r["dir"] for r in summary["runs"]][0] == "mujoco-inverted_pendulum/eureka-s0"


@pytest.mark.parametrize(("text", "why"), [("[" * 65 + "]" * 65, "deeper than 64"), ("1" * 31, "31 digits"),
                                           (json.dumps("x" * (4 << 20 | 1)), "characters")])
def test_bounded_json_refuses_depth_digits_and_long_strings(text, why):
    with pytest.raises(BoundedParseError, match=why):
        loads(text)
    assert loads("[" * 64 + "]" * 64) and loads("1" * 30) and loads('{"a": [1.5e300, NaN]}')


def test_status_reads_a_multirun_file_as_data_and_resolves_none_of_its_interpolations(tmp_path, monkeypatch):
    from omegaconf import OmegaConf

    calls = []
    OmegaConf.register_new_resolver("bird_test_probe", lambda *args: calls.append(args) or "x", replace=True)
    monkeypatch.setenv("BIRD_TEST_SECRET", "sk-do-not-leak")
    sweep = _sweep(tmp_path, "hydra:\n  sweeper:\n    params:\n"
                             "      llm.model: choice(${bird_test_probe:a},${oc.env:BIRD_TEST_SECRET})\n"
                             "      seed: range(0,3)\n"
                             "  overrides:\n    task:\n    - llm.base_url=${bird_test_probe:b}\n")
    summary = summarise(sweep)
    assert summary["cells"] == 6 and summary["note"] is None and calls == []
    assert "sk-do-not-leak" not in json.dumps(summary, default=str)
