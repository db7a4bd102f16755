"""Kill-and-resume equality for every method in conf/method/: the shared smoke search's run directory as a kill late
in an iteration left it (iteration 2 after select wrote islands, population, critics; for rda, iteration 1 after its
subtask revision; before the checkpoint: tests/run_kills.py), resumed and killed again early in iteration 2
(candidates generated and verified), resumed to the end: the same records as the
uninterrupted search (islands, critics, self-verification ratings, crossovers, the tree, subtasks.jsonl, curves,
result). The kills are exceptions raised at those events in this process; tests/test_resume.py kills a real process
with SIGKILL (Eureka-style) at the two points."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from run_kills import Killed, kill_at, killed_copy_of

from bird.bundle.compare import compare_runs, read_run
from bird.loop import search

ROOT = Path(__file__).resolve().parents[1]
METHODS = sorted(p.stem for p in (ROOT / "conf" / "method").glob("*.yaml"))


def killed_early(iterations: int):
    """Early in iteration 2 (its first candidate verified: LLM calls made, nothing trained); a one-iteration search
    right after its resume rewound the directory."""
    if iterations < 2:
        return lambda name, fields: name == "search_resumed"
    return lambda name, fields: name == "candidate_verified" and str(fields.get("id", "")).startswith("it2-")


def _why(comparison) -> str:
    lines = [f"only uninterrupted: {p}" for p in comparison.only_recorded]
    lines += [f"only resumed: {p}" for p in comparison.only_replayed] + [str(d) for d in comparison.differences]
    return "\n".join(lines[:30])


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_killed_twice_in_iteration_2_the_search_resumes_to_the_uninterrupted_result(method, method_smoke_run,
                                                                                    method_smoke_config, tmp_path):
    clean, expected = method_smoke_run(method)
    run = tmp_path / "run"
    shutil.copytree(killed_copy_of(clean), run)
    assert not (run / "result.json").exists() or json.loads((run / "status.json").read_text())["state"] != "completed"
    cfg = method_smoke_config(method)
    with kill_at(killed_early(len(expected["iterations"]))) as fired, pytest.raises(Killed):
        search(cfg, run)
    assert fired
    result = search(cfg, run)
    assert len(result["resumes"]) == 2  # the late kill, then the early one
    comparison = compare_runs(read_run(clean), read_run(run))
    assert comparison.identical, _why(comparison)


def test_a_resume_cuts_every_per_iteration_log_back_to_the_checkpoint(tmp_path):
    from bird import checkpoint
    from bird.state import Plan, SearchState

    logs = {"islands.jsonl": '{"iteration": 1}\n', "subtasks.jsonl": '{"iteration": 1}\n',
            "population.jsonl": '{"iteration": 1}\n', "screens.jsonl": '{"id": "it1-c0"}\n'}
    for name, kept in logs.items():
        (tmp_path / name).write_text(kept + '{"iteration": 2}\n')
    state = SearchState(None, Plan(2, 3, 10, 10, 1, 1), 0, {})  # type: ignore[arg-type]
    state.iteration = 1
    saved = checkpoint.SavedSearch("h", state, {}, {n: len(k) for n, k in logs.items()}, {}, 0.0)
    checkpoint.rewind(tmp_path, saved)
    assert {n: (tmp_path / n).read_text() for n in logs} == logs
    # a checkpoint written before a file was cut back leaves that file as it is
    (tmp_path / "islands.jsonl").write_text("a\nb\n")
    checkpoint.rewind(tmp_path, checkpoint.SavedSearch("h", state, {}, {}, {}, 0.0))
    assert (tmp_path / "islands.jsonl").read_text() == "a\nb\n"
