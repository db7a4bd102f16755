"""No leaks in real runs: the saved prompts of each method's shared smoke search (offline generator, real training)
are audited by bird.leaks (candidate prompts, decomposition and judge prompts, few-shot examples). Each audit has a
positive control: the same run with the env's own reward/success source pasted into its saved prompts is caught."""

import inspect
import json
import shutil
import subprocess
import sys

import pytest

from bird.config.load import CONF_DIR
from bird.envs.registry import make_adapter
from bird.leaks import audit_run
from bird.stages.feedback import feedback
from bird.stages.generate import build_request
from bird.state import Plan, SearchState
from bird.types import Candidate, Checkpoint, TrainResult

METHODS = sorted(p.stem for p in (CONF_DIR / "method").glob("*.yaml"))
MW_EUREKA = ("method=eureka", "env=metaworld/reach", "env.horizon=100", "budget.env_steps=512",
             "budget.final_env_steps=512")  # shared with tests/test_fitness.py


def _env_source(run) -> str:
    """The module source of the run's env class: reward and success code included (a deliberate leak)."""
    spec = json.loads((run / "task.json").read_text())
    if spec["suite"] == "metaworld":
        from metaworld.env_dict import ALL_V3_ENVIRONMENTS

        cls = ALL_V3_ENVIRONMENTS[spec["extra"]["metaworld_name"]]
    else:
        import gymnasium as gym

        cls = type(gym.make(spec["extra"]["gym_id"]).unwrapped)
    return inspect.getsource(inspect.getmodule(cls))


def _paste(run, text: str) -> list[str]:
    """Append `text` to the last user message of every saved prompt (prompt files, the judge-role passes' calls, the
    subtask revisions); returns the files changed."""
    changed = []
    files = [p for p in run.glob("candidates/*/prompt.json")] + [run / "decomposition.json"]
    for name in ("judge.json", "judge_scores.json", "summary.json", "thought.json", "self_verify.json"):
        files += list(run.glob(f"candidates/*/{name}"))
    for path in [*files, run / "critics.json"]:
        if not path.exists():
            continue
        data = json.loads(path.read_text())
        if path.name == "critics.json":  # a list of critic records, each with its prompt
            lists = [critic.get("prompt") or [] for critic in data]
        else:
            lists = [data] if isinstance(data, list) else [data.get("prompt") or []]
            lists += [c.get("prompt") or [] for c in (data.get("calls") or [] if isinstance(data, dict) else [])]
        users = [[m for m in messages if m["role"] == "user"] for messages in lists]
        for found in users:
            if found:
                found[-1]["content"] += "\n" + text
        if any(users):
            path.write_text(json.dumps(data))
            changed.append(path.name)
    revisions = run / "subtasks.jsonl"
    if revisions.exists():
        recs = [json.loads(line) for line in revisions.read_text().splitlines()]
        for rec in recs:
            rec["prompt"][-1]["content"] += "\n" + text
        revisions.write_text("".join(json.dumps(r) + "\n" for r in recs))
        changed.append("subtasks.jsonl")
    return changed


def _audited(run, tmp_path) -> None:
    assert audit_run(run) == []
    copy = tmp_path / "leaky_run"
    shutil.copytree(run, copy)
    changed = _paste(copy, _env_source(copy))
    assert "prompt.json" in changed
    found = audit_run(copy)
    for kind in set(changed):  # every kind of saved prompt the run has is read and caught
        assert any(kind in f for f in found), f"leak pasted into {kind} not caught: {found[:5]}"


@pytest.mark.slow
@pytest.mark.parametrize("method", METHODS)
def test_every_methods_real_run_shows_its_generator_and_judge_no_hidden_code(method_smoke_run, tmp_path, method):
    run, result = method_smoke_run(method)
    if result.get("reward_source") == "reference":  # the oracle asks no generator: no prompt to show anything in
        assert audit_run(run) == [] and result["llm_calls"] == 0
        assert all(json.loads(p.read_text()) == [] for p in run.glob("candidates/*/prompt.json"))
        return
    _audited(run, tmp_path)


@pytest.mark.slow
def test_eurekas_metaworld_run_shows_no_hidden_code(smoke_run, tmp_path):
    run, _ = smoke_run(*MW_EUREKA)
    _audited(run, tmp_path)


@pytest.mark.slow
def test_leak_cli_exits_non_zero_on_a_leaky_run(method_smoke_run, tmp_path):
    run, _ = method_smoke_run("eureka")
    ok = subprocess.run([sys.executable, "-m", "bird.leaks", str(run)], capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and "no leaks found" in ok.stdout
    copy = tmp_path / "leaky_run"
    shutil.copytree(run, copy)
    _paste(copy, "info = {'reward_survive': reward}  # InvertedPendulum-v5's reward, pasted on purpose")
    bad = subprocess.run([sys.executable, "-m", "bird.leaks", str(copy)], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 1 and "names 'reward_survive'" in bad.stdout


def _state(cfg):
    adapter = make_adapter(cfg.env)
    state = SearchState(adapter.spec, Plan(1, 2, 10, 10, 1, 1), 0, {})
    state.iteration = 2
    cand = Candidate("it1-c0", 1, 0, [], response="```python\nprint()\n```", code="x = 1\n")
    state.candidates[cand.id] = cand
    curve = tuple(Checkpoint(1000 * i, score, 0.0, 5.0, 777.77, 10.0, {"a": float(i)})
                  for i, score in enumerate([0.123456, 0.654321], start=1))
    results = {cand.id: TrainResult(cand.id, 0, curve, 2000, 1.0)}
    state.results.update(results)
    state.reports.update(feedback(cfg, state, [cand], results))
    state.iteration_best = state.global_best = cand.id
    return state


def test_score_reaches_the_generator_only_when_the_method_shows_it(compose_cfg):
    """eureka on MuJoCo shows its native signal, the reference-reward return, as task_score (BIRD's matched runs);
    +choice=benchmark_score_shown shows the benchmark score instead; show_score=false shows neither."""
    native_cfg = compose_cfg("method=eureka", "env=mujoco/hopper")
    native = json.dumps(build_request(native_cfg, _state(native_cfg), 0).messages_json())
    assert "task_score: [777.77, 777.77]" in native and "0.65" not in native
    bench_cfg = compose_cfg("method=eureka", "env=mujoco/hopper", "+choice=benchmark_score_shown")
    shown = build_request(bench_cfg, _state(bench_cfg), 0)
    assert "task_score" in shown.context["feedback"] and "0.65" in json.dumps(shown.messages_json())
    assert "777.77" not in json.dumps(shown.messages_json()) + json.dumps(shown.context)  # reference return
    cfg = compose_cfg("method=eureka", "env=mujoco/hopper", "feedback.show_score=false")
    hidden = build_request(cfg, _state(cfg), 0)
    blob = json.dumps(hidden.messages_json()) + json.dumps(hidden.context)
    assert "task_score" not in blob and "0.65" not in blob and "0.12" not in blob and "777.77" not in blob
