"""Crash-safe resume: SIGKILL after an iteration, re-run, same result; bird.resume; rewinding; bad checkpoints."""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from run_kills import kill_when

from bird import checkpoint, loop
from bird.config.load import ConfigError
from bird.llm.factory import make_generator
from bird.llm.offline.synth import OfflineSynthesiser
from bird.loop import search
from bird.registry import register
from bird.resume import main as resume_main
from bird.rundir import RunDir
from bird.runlock import RunLock, RunLockedError

ROOT = Path(__file__).resolve().parents[1]
# half the smoke budget's steps, no clips; a generous per-call limit: under heavy machine load a sandbox timeout
# would make two runs differ
SMOKE = ["env=mujoco/inverted_pendulum", "budget.env_steps=1024", "budget.final_env_steps=1024", "verify.call_timeout_s=60",
         "video.record=none"]


def _digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _events(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]


def _kill_when(cmd: list[str], run: Path, marker: str) -> None:
    """Start `cmd`, SIGKILL its whole process group as soon as it writes `marker` to events.jsonl."""
    kill_when(cmd, run, marker, ROOT)


@pytest.mark.slow
def test_a_search_killed_after_iteration_1_and_again_in_iteration_2_resumes_with_the_same_command(tmp_path, smoke_run):
    run = tmp_path / "killed"
    cmd = [sys.executable, "-m", "bird", "budget=smoke", "run.progress=false", *SMOKE, f"hydra.run.dir={run}"]
    _kill_when(cmd, run, '"iteration_done"')  # right after iteration 1 is announced
    assert not (run / "result.json").exists()
    before = {c: _digests(run / "candidates" / c) for c in ("it1-c0", "it1-c1")}
    assert all("reward.py" in d and "candidate.json" in d for d in before.values())
    # the same command again, killed mid-iteration 2 (its candidates generated, verified, in training)
    _kill_when(cmd, run, '"candidate_verified", "id": "it2-c1"')
    assert (run / "candidates" / "it2-c1").is_dir() and not (run / "result.json").exists()

    again = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    result = json.loads((run / "result.json").read_text())
    assert result["status"] == "completed"
    assert {c: _digests(run / "candidates" / c) for c in before} == before  # iteration 1 untouched
    calls = [json.loads(line) for line in (run / "llm_calls.jsonl").read_text().splitlines()]
    assert [c["iteration"] for c in calls] == [1, 1, 2, 2]  # no second call for iteration 1
    lost = [json.loads(line)["iteration"] for line in (run / "lost_llm_calls.jsonl").read_text().splitlines()]
    assert lost and set(lost) == {2}  # the interrupted iteration 2 asked again; its first calls are kept aside
    assert [r["from_iteration"] for r in result["resumes"]] == [1, 1], result["resumes"]
    assert "resuming" in again.stderr and "took over the stale lock" in again.stderr, again.stderr[-2000:]
    assert "replaced by this run" not in again.stderr  # resumed, not cleared
    assert result["llm_calls"] == 4 and not (run / checkpoint.CHECKPOINT_NAME).exists()
    assert [e["event"] for e in _events(run)].count("iteration_done") == 2

    # an uninterrupted run of the same config (shared with other tests of the session where they ask for it)
    clean, expected = smoke_run(*SMOKE)
    assert result["config_hash"] == expected["config_hash"]
    assert result["returned"] == expected["returned"], (result["iterations"], expected["iterations"])
    code = result["returned"]["code_path"]
    assert (run / code).read_bytes() == (clean / code).read_bytes()
    assert (result["returned_score"], result["env_steps"]) == (expected["returned_score"], expected["env_steps"])


class _CrashOnce(OfflineSynthesiser):
    """The offline synthesiser, except that the first iteration-2 request kills the search (once per test)."""

    crash = True

    def complete(self, request):  # noqa: ANN001, ANN201
        if request.context.get("iteration") == 2 and _CrashOnce.crash:
            _CrashOnce.crash = False
            raise KeyboardInterrupt("simulated crash during iteration 2")
        return super().complete(request)


register("llm", "crash_once_test")(lambda cfg: _CrashOnce(cfg.model))


@pytest.mark.slow
def test_bird_resume_continues_from_the_run_directory_alone(compose_cfg, tmp_path):
    _CrashOnce.crash = True
    cfg = compose_cfg(*SMOKE, "llm.backend=crash_once_test", "llm.cache=off")
    with pytest.raises(KeyboardInterrupt):
        search(cfg, tmp_path)
    assert json.loads((tmp_path / "status.json").read_text())["state"] == "failed"
    saved = (tmp_path / checkpoint.CHECKPOINT_NAME).read_bytes()
    assert resume_main([str(tmp_path), "seed=7", "--trust-config"]) == 2  # another config: refused, checkpoint kept
    assert (tmp_path / checkpoint.CHECKPOINT_NAME).read_bytes() == saved
    # an execution-only override is fine; the saved limit (looser than the default) is given again, as one's own
    assert resume_main([str(tmp_path), "train.workers=1", "verify.call_timeout_s=60"]) == 0
    result = json.loads((tmp_path / "result.json").read_text())
    assert [it["iteration"] for it in result["iterations"]] == [1, 2]
    assert result["resumes"][0]["from_iteration"] == 1 and result["llm_calls"] == 4
    assert resume_main([str(tmp_path), "--trust-config"]) == 0  # completed: nothing to do


def _saved(iteration: int, sizes: dict[str, int]) -> checkpoint.SavedSearch:
    from bird.state import Plan, SearchState

    state = SearchState(spec=None, plan=Plan(2, 3, 10, 10, 1, 1), seed=0, smoke_batch={})  # type: ignore[arg-type]
    state.iteration = iteration
    return checkpoint.SavedSearch("h", state, {}, sizes, {}, 0.0)


def test_rewind_removes_the_inflight_iteration_and_moves_its_llm_calls(tmp_path):
    for cid in ("it1-c0", "it2-c0", "it2-c1", "it10-c0"):
        (tmp_path / "candidates" / cid).mkdir(parents=True)
    (tmp_path / "expand" / "it2").mkdir(parents=True)
    (tmp_path / "final" / "seed1000").mkdir(parents=True)
    kept = '{"iteration": 1, "cost_usd": 0.5}\n'
    (tmp_path / "llm_calls.jsonl").write_text(kept + '{"iteration": 2, "cost_usd": 0.25}\n{"iteration": 2, "cos')
    (tmp_path / "population.jsonl").write_text('{"iteration": 1}\n{"iteration": 2}\n')
    (tmp_path / "events.jsonl").write_text('{"event": "a"}\n{"event": "b", "x"')
    record = checkpoint.rewind(tmp_path, _saved(1, {"llm_calls.jsonl": len(kept), "population.jsonl": 17}))
    assert sorted(p.name for p in (tmp_path / "candidates").iterdir()) == ["it1-c0"]
    assert not (tmp_path / "expand" / "it2").exists() and not (tmp_path / "final").exists()
    assert (tmp_path / "llm_calls.jsonl").read_text() == kept
    assert (tmp_path / "lost_llm_calls.jsonl").read_text() == '{"iteration": 2, "cost_usd": 0.25}\n'
    assert (record["lost_llm_calls"], record["lost_cost_usd"]) == (1, 0.25)
    assert (tmp_path / "population.jsonl").read_text() == '{"iteration": 1}\n'
    assert (tmp_path / "events.jsonl").read_text() == '{"event": "a"}\n'
    assert record["removed"] == ["candidates/it10-c0", "candidates/it2-c0", "candidates/it2-c1", "expand/it2", "final"]


def test_a_corrupt_or_foreign_checkpoint_gives_a_clear_error(compose_cfg, tmp_path):
    cfg = compose_cfg()
    assert checkpoint.load(tmp_path, cfg) is None
    (tmp_path / checkpoint.CHECKPOINT_NAME).write_bytes(b"not a pickle")
    with pytest.raises(checkpoint.CheckpointError, match="cannot be read"):
        checkpoint.load(tmp_path, cfg)
    checkpoint.save(tmp_path, compose_cfg("seed=5"), _saved(1, {}).state, {}, 0.0, [])
    assert [p.name for p in tmp_path.iterdir()] == [checkpoint.CHECKPOINT_NAME]  # no temp file left
    with pytest.raises(ConfigError, match="checkpoint of another config"):
        checkpoint.load(tmp_path, cfg)


def _half_written(root: Path) -> None:
    """What a killed search leaves: records, an unfinished status, a candidate folder; and a file of the user's."""
    (root / "candidates" / "it1-c0").mkdir(parents=True)
    (root / "candidates" / "it1-c0" / "reward.py").write_text("def compute_reward(): ...\n")
    (root / "events.jsonl").write_text('{"t": 0, "event": "search_started"}\n')
    (root / "status.json").write_text('{"state": "running"}')
    (root / "notes.txt").write_text("the user's")


def test_a_rerun_resumes_a_directory_with_a_checkpoint_and_clears_one_without(compose_cfg, tmp_path):
    with_ckpt, without = tmp_path / "with", tmp_path / "without"
    cfg = compose_cfg()
    for root in (with_ckpt, without):
        _half_written(root)
    checkpoint.save(with_ckpt, cfg, _saved(1, {}).state, {}, 0.0, [])
    saved = loop._resumable_or_cleared(cfg, with_ckpt)
    assert saved is not None and saved.state.iteration == 1
    assert (with_ckpt / "candidates" / "it1-c0" / "reward.py").exists() and (with_ckpt / "events.jsonl").exists()
    assert loop._resumable_or_cleared(cfg, without) is None  # clear_previous_run's case
    assert sorted(p.name for p in without.iterdir()) == ["notes.txt"]
    # run.resume=false: the checkpoint is cleared with the rest, and the next run starts over
    assert loop._resumable_or_cleared(compose_cfg("run.resume=false"), with_ckpt) is None
    assert sorted(p.name for p in with_ckpt.iterdir()) == ["notes.txt"]


def test_a_directory_locked_by_another_writer_is_neither_resumed_nor_cleared(compose_cfg, tmp_path):
    _half_written(tmp_path)
    checkpoint.save(tmp_path, compose_cfg("seed=3"), _saved(1, {}).state, {}, 0.0, [])  # not even read
    with RunLock(tmp_path):
        before = _digests(tmp_path)
        with pytest.raises(RunLockedError, match=f"pid {os.getpid()}"):
            search(compose_cfg(), tmp_path)
        assert _digests(tmp_path) == before


@pytest.mark.parametrize(("method", "judged"), [("regot", True), ("eureka", False)])
def test_a_resumed_search_has_its_judge_rng_streams_and_resume_record(compose_cfg, tmp_path, method, judged):
    cfg = compose_cfg(f"method={method}", "env=metaworld/drawer_open")
    random.seed(7)
    np.random.seed(7)
    checkpoint.save(tmp_path, cfg, _saved(1, {}).state, {}, 0.0, [])
    following = (random.random(), np.random.random_sample(3).tolist())  # what the search would draw next
    random.seed(99)  # draws of this session's set-up
    np.random.seed(99)
    generator = make_generator(cfg.llm, cfg.budget, tmp_path / "llm_calls.jsonl")
    state, _, resumes = loop._start(cfg, loop.make_plan(cfg), RunDir(tmp_path), None, generator,
                                    checkpoint.load(tmp_path, cfg), pool=None)  # a resume trains no expert
    assert (random.random(), np.random.random_sample(3).tolist()) == following  # RNG streams continue
    assert (state.judge is not None) == judged  # the judge is not pickled: it is rebuilt on resume
    assert [r["from_iteration"] for r in resumes] == [1]
    # a search killed again before iteration 2 ends still reports this resume
    assert checkpoint.load(tmp_path, cfg).resumes == resumes
