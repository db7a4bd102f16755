"""End-to-end searches on tiny budgets: the run directory, failure as data, every method config."""

import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bird.llm.base import Generator, Request, Response
from bird.loop import search
from bird.registry import register

ROOT = Path(__file__).resolve().parents[1]
HEAD = "import numpy as np\n\ndef compute_reward(obs, action, next_obs, info):\n"
ANSWERS = [
    HEAD + "    up = np.exp(-next_obs['hinge_angle'] ** 2 / 0.1)\n    return up, {'upright': up}\n",
    HEAD + "    return (\n",  # compile error
    HEAD + "    return next_obs['no_such_field'], {}\n",  # runtime error
    HEAD + "    while True:\n        pass\n",  # timeout
    HEAD + "    return next_obs['hinge_angle'] * np.inf, {}\n",  # non-finite
    "I cannot write code today.",  # no code block
]


class ScriptedGenerator(Generator):
    """Test double at the LLM boundary: answers sample i with ANSWERS[i]."""

    provider = "scripted-test"

    def complete(self, request: Request) -> Response:
        return Response(f"```python\n{ANSWERS[request.sample_index]}```" if "def " in ANSWERS[request.sample_index]
                        else ANSWERS[request.sample_index], self.model)


register("llm", "scripted_test")(lambda cfg: ScriptedGenerator(cfg.model))


@pytest.mark.slow
def test_failure_is_data_and_the_search_goes_on(compose_cfg, tmp_path):
    cfg = compose_cfg("env=mujoco/inverted_pendulum", "llm.backend=scripted_test", "budget.max_candidates=6",
                      "generate.n_candidates=6", "loop.iterations=1", "verify.call_timeout_s=1")
    result = search(cfg, tmp_path)
    kinds = {}
    for cid in ("it1-c0", "it1-c1", "it1-c2", "it1-c3", "it1-c4", "it1-c5"):
        record = json.loads((tmp_path / "candidates" / cid / "candidate.json").read_text())
        kinds[cid] = record["failure"]["kind"] if record["failure"] else "trained"
    assert kinds == {"it1-c0": "trained", "it1-c1": "compile_error", "it1-c2": "runtime_error",
                     "it1-c3": "timeout", "it1-c4": "non_finite", "it1-c5": "parse_error"}
    assert result["returned"]["candidate_id"] == "it1-c0"
    assert math.isfinite(result["returned_score"])
    assert result["failures"] == {"compile_error": 1, "non_finite": 1, "parse_error": 1, "runtime_error": 1,
                                  "timeout": 1}


@pytest.mark.slow
def test_a_search_whose_every_training_fails_exits_1_ended_failed_and_a_rerun_runs_it_again(tmp_path):
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "bird", "budget=smoke", "env=mujoco/inverted_pendulum", "budget.max_iterations=1",
           "train.timeout_s=0.001", "run.progress=false", "video.record=none", f"hydra.run.dir={run}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 1, proc.stderr[-3000:]
    result = json.loads((run / "result.json").read_text())
    assert result["status"] == "failed" and result["n_trained"] == 0 and result["policy_trainings"] == 2
    assert result["status_reason"].startswith("no candidate trained") and "timeout × 2" in result["status_reason"]
    assert f"the search ended failed: {result['status_reason']}" in proc.stderr
    assert json.loads((run / "status.json").read_text())["state"] == "failed"
    assert f"eureka on mujoco/inverted_pendulum seed 0: failed ({result['status_reason']})" in proc.stdout  # progress off
    again = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert again.returncode == 1 and "already completed" not in again.stdout
    assert "they are replaced by this run" in again.stderr  # run again from the start, not skipped


@pytest.mark.slow
def test_smoke_search_cli_writes_a_complete_run_directory(tmp_path):
    run = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "bird", "budget=smoke", "env=mujoco/hopper",
                           f"hydra.run.dir={run}"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads((run / "result.json").read_text())
    assert math.isfinite(result["returned_score"])
    for key in ("method", "env", "seed", "returned", "returned_score", "llm_calls", "tokens", "env_steps", "wall_s"):
        assert key in result
    assert result["generator"]["label"] == "offline synthesiser (no-LLM baseline)"
    assert json.loads((run / "status.json").read_text())["state"] == "completed"
    assert (run / "config.yaml").exists() and (run / "task.json").exists()
    events = [json.loads(line)["event"] for line in (run / "events.jsonl").read_text().splitlines()]
    assert events[0] == "search_started" and events[-1] == "search_done"
    cand = run / "candidates" / result["returned"]["candidate_id"]
    for name in ("reward.py", "prompt.json", "response.txt", "verify.json", "curve.csv", "candidate.json"):
        assert (cand / name).exists(), name
    assert "returned_score" in proc.stdout  # the summary table
    # the live line: each checkpoint it shows with the score that checkpoint has in curve.csv, the last one included
    shown = re.findall(r"\[(?:it \d/\d|final)\]\s+(\S+)\s+([\d,]+)/[\d,]+ steps  checkpoint score (-?[\d.]+)", proc.stderr)
    assert {cid for cid, _, _ in shown} >= {"it1-c0", "it2-c1", "final-s1000"}, proc.stderr[-3000:]
    for cid, steps, score in shown:
        folder = run / ("final/seed1000" if cid == "final-s1000" else f"candidates/{cid}")
        curve = {int(row.split(",")[0]): float(row.split(",")[1])
                 for row in (folder / "curve.csv").read_text().splitlines()[1:]}
        assert f"{curve[int(steps.replace(',', ''))]:.3f}" == score, (cid, steps, score, curve)
    assert sum(int(steps.replace(",", "")) == 2048 for cid, steps, _ in shown if cid == "final-s1000") == 1
    # ties: smoke's first checkpoint scores the untrained policy (said at start); an iteration whose ranked candidates
    # all have one fitness is recorded, said on the live display and in the summary line
    assert result["caveats"] == [next(line for line in proc.stderr.splitlines()
                                      if line.startswith("bird: note: budget=smoke: the first of 2 checkpoints (1,024 "
                                                         "env steps) comes before the first policy update"))[12:]]
    fitness = {}
    for path in run.glob("candidates/*/candidate.json"):
        cand = json.loads(path.read_text())
        fitness.setdefault(cand["iteration"], set()).add(cand["fitness"])
    tied = [it for it, values in sorted(fitness.items()) if len(values) == 1]
    assert result["tied_iterations"] == tied and tied  # Hopper at smoke: every fitness is the untrained policy's
    assert [it["all_tied"] for it in result["iterations"]] == [it in tied for it in (1, 2)]
    for it in tied:
        assert f"iteration {it}: all 2 ranked candidates tie on fitness " in proc.stderr
    assert f"· {len(tied)} of 2 selections tied on fitness ·" in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("method", sorted(p.stem for p in (ROOT / "conf" / "method").glob("*.yaml")))
def test_every_method_config_runs_end_to_end(method_smoke_run, method):
    _, result = method_smoke_run(method)  # shared with the tests that read these runs' prompts (test_leaks.py)
    assert result["method"] == method and math.isfinite(result["returned_score"])


@pytest.mark.slow
def test_reference_reward_oracle_trains_without_generating(compose_cfg, tmp_path):
    cfg = compose_cfg("method=zeroshot", "env=mujoco/inverted_pendulum", "train.reward_source=reference")
    result = search(cfg, tmp_path)
    assert result["llm_calls"] == 0 and math.isfinite(result["returned_score"])


@pytest.mark.slow
def test_llm_call_budget_stops_generation_cleanly(compose_cfg, tmp_path):
    cfg = compose_cfg("env=mujoco/inverted_pendulum", "budget.max_llm_calls=3")
    result = search(cfg, tmp_path)
    assert result["llm_calls"] == 3 and "max_llm_calls" in result["stop_reason"]
    assert result["failures"].get("skipped") == 1


@pytest.mark.slow
def test_joblib_multirun_sweep_runs_every_cell(tmp_path):
    sweep = tmp_path / "sweep"
    proc = subprocess.run(
        [sys.executable, "-m", "bird", "-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "budget=smoke",
         "budget.max_iterations=1", "env=mujoco/inverted_pendulum", "method=eureka,zeroshot", "run.progress=false",
         "video.record=none", f"hydra.sweep.dir={sweep}"],
        capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    results = [json.loads(p.read_text()) for p in sweep.rglob("result.json")]
    assert sorted(r["method"] for r in results) == ["eureka", "zeroshot"]
    assert all(math.isfinite(r["returned_score"]) and not r["failures"] for r in results)


@pytest.mark.slow
def test_a_sweep_cell_that_ends_failed_fails_the_sweep_after_its_other_cells_ran(tmp_path):
    sweep = tmp_path / "sweep"
    proc = subprocess.run(
        [sys.executable, "-m", "bird", "-m", "budget=smoke", "budget.max_iterations=1", "method=zeroshot",
         "env=mujoco/inverted_pendulum", "train.timeout_s=0.001,0", "run.progress=false", "video.record=none",
         f"hydra.sweep.dir={sweep}", "hydra.sweep.subdir=${hydra.job.num}"],
        capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert proc.returncode != 0 and "SearchNotDone" in proc.stderr, proc.stderr[-3000:]
    ends = sorted(json.loads(p.read_text())["status"] for p in sweep.rglob("result.json"))
    assert ends == ["completed", "failed"]  # the failed cell came first; the second still ran


ZEROSHOT = ["budget=smoke", "budget.max_iterations=1", "method=zeroshot", "env=mujoco/inverted_pendulum",
            "run.progress=false", "video.record=none"]


def _cli(run: Path, *overrides: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bird", *ZEROSHOT, f"hydra.run.dir={run}", *overrides],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.fixture(scope="module")
def completed_run(tmp_path_factory) -> Path:
    """One completed zeroshot smoke run; each test works on its own copy (the config hash ignores hydra.run.dir)."""
    run = tmp_path_factory.mktemp("completed") / "run"
    first = _cli(run)
    assert first.returncode == 0, first.stderr[-2000:]
    return run


@pytest.fixture
def run_copy(completed_run, tmp_path) -> Path:
    shutil.copytree(completed_run, tmp_path / "run", symlinks=True)
    return tmp_path / "run"


@pytest.mark.slow
def test_rerunning_a_completed_run_directory_skips_it_and_a_different_config_is_refused(run_copy):
    before = (run_copy / "result.json").read_text()
    again = _cli(run_copy)
    assert again.returncode == 0 and "skipped" in again.stdout
    assert (run_copy / "result.json").read_text() == before
    other = _cli(run_copy, "seed=1")
    assert other.returncode == 2 and "another config" in other.stderr


def _events(run: Path) -> list[str]:
    return [json.loads(line)["event"] for line in (run / "events.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_skip_completed_false_reruns_and_a_half_written_directory_starts_afresh(run_copy):
    run = run_copy
    started = json.loads((run / "status.json").read_text())["started"]
    # run.skip_completed=false: the completed run is run again and its records replaced, not appended to
    again = _cli(run, "run.skip_completed=false")
    assert again.returncode == 0 and "skipped" not in again.stdout, again.stderr[-2000:]
    assert "replaced by this run" in again.stderr
    assert json.loads((run / "status.json").read_text())["state"] == "completed"
    assert _events(run).count("search_started") == 1 and _events(run)[-1] == "search_done"
    assert (run / ".hydra" / "config.yaml").exists()
    # a crash mid-search: status running, no result, a candidate the next run will not write
    (run / "status.json").write_text(json.dumps({"state": "running", "started": started}))
    (run / "result.json").unlink()
    (run / "candidates" / "it9-c0").mkdir()
    (run / "events.jsonl").write_text('{"t": 0, "event": "search_started"}\n')
    resumed = _cli(run)
    assert resumed.returncode == 0 and "skipped" not in resumed.stdout, resumed.stderr[-2000:]
    assert json.loads((run / "result.json").read_text())["status"] == "completed"
    assert json.loads((run / "status.json").read_text())["state"] == "completed"
    assert not (run / "candidates" / "it9-c0").exists()
    assert _events(run).count("search_started") == 1
