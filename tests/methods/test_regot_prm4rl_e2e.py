"""RE-GoT and PRM4RL end to end (offline, budget=smoke, short horizon), their ablations, and the task-graph schema."""

import copy
import json
import math

import pytest

from bird.components.decompose import graph_problems
from bird.loop import search

FAST = ["env=metaworld/drawer_open", "env.horizon=100", "budget.env_steps=512", "budget.final_env_steps=512"]
GRAPH = {"nodes": [{"id": "a", "status": "hand away"}, {"id": "b", "status": "hand at handle"},
                   {"id": "c", "status": "drawer open"}],
         "edges": [{"src": "a", "dst": "b", "behavior": "reach", "substep_type": "reward", "success_condition": "d < 0.05"},
                   {"src": "b", "dst": "c", "behavior": "pull", "substep_type": "reward", "success_condition": "d < 0.05"}],
         "start": "a", "goal": "c"}


def _graph(edit) -> dict:
    g = copy.deepcopy(GRAPH)
    edit(g)
    return g


@pytest.mark.parametrize("edit,problem", [
    (lambda g: g["edges"].append({"src": "c", "dst": "a", "behavior": "undo", "substep_type": "reward",
                                  "success_condition": "x"}), "cycle"),
    (lambda g: g["edges"][1].pop("success_condition"), "no success_condition"),
    (lambda g: g["edges"].pop(), "not reachable"),
    (lambda g: g["nodes"].append({"id": "d", "status": "dangling"}), "not on any path"),
    (lambda g: g["edges"][0].update(dst="z"), "unknown node"),
    (lambda g: g.update(goal="q"), "'goal'"),
    (lambda g: g["edges"][0].update(substep_type="teleport"), "substep_type"),
])
def test_graph_schema_names_the_problem(edit, problem):
    assert graph_problems(GRAPH) == []
    problems = graph_problems(_graph(edit))
    assert problems and any(problem in p for p in problems), problems


def test_a_primitive_edge_needs_no_success_condition():
    assert graph_problems(_graph(lambda g: g["edges"][0].update(substep_type="primitive", success_condition=""))) == []


@pytest.mark.slow
@pytest.mark.parametrize("choice,form,prior", [
    (None, "potential_shaping", True),
    ("no_subtask_prior", "potential_shaping", False),
    ("raw_progress_reward", "raw_progress", True),
    ("prm_reference_reward", "reference", True),
])
def test_prm4rl_smoke_search_screens_then_trains_once(compose_cfg, tmp_path, choice, form, prior):
    cfg = compose_cfg("method=prm4rl", *FAST, *([f"+choice={choice}"] if choice else []))
    assert cfg.reward.form == form and (cfg.train.obs_augment != "none") == prior
    result = search(cfg, tmp_path)
    assert math.isfinite(result["returned_score"]) and result["llm_calls"] == 1 and result["n_failed"] == 0
    [verdict] = [json.loads(line) for line in (tmp_path / "screens.jsonl").read_text().splitlines()]
    assert verdict["screen"] == "progress_expert" and verdict["pass"] and verdict["expert"]["psi_reaches_last"]
    assert result["env_steps"] == cfg.budget.final_env_steps  # trained once, in the final retrain
    assert any("one-hot" in s for s in result["substitutes"]) == prior
    assert "success" not in (tmp_path / "candidates" / "it1-c0" / "prompt.json").read_text().lower()


@pytest.mark.slow
@pytest.mark.parametrize("overrides,mode", [
    ([], "vlm"),
    (["judge.mode=state_text", "+choice=zero_shot_decomposition"], "state_text"),
    (["+choice=no_decomposition", "judge.mode=state_text"], "state_text"),
])
def test_regot_smoke_search_records_graph_and_judge_verdicts(compose_cfg, tmp_path, overrides, mode):
    cfg = compose_cfg("method=regot", *FAST, "budget.max_iterations=2", "final.retrain=false", *overrides)
    if mode == "vlm":
        from bird.envs.frames import RenderingUnavailable, gl_backend

        try:
            gl_backend()
        except RenderingUnavailable as exc:
            pytest.skip(f"rendering unavailable: {exc}")
    result = search(cfg, tmp_path)
    assert math.isfinite(result["returned_score"]) and result["returned"]["candidate_id"] == "it2-c0"
    judge = json.loads((tmp_path / "candidates" / "it1-c0" / "judge.json").read_text())
    assert judge["judge"].startswith(mode + ":") and judge["error"] is None
    assert judge["judge_generator"]["label"]  # offline answers are labelled
    assert set(judge["verdict"]) == {"rollout_description", "motion_problems", "redesign_suggestions"}
    assert {"max", "mean", "min", "std"} == set(judge["component_stats"]["reward"])
    assert (judge["n_frames"] > 0) == (mode == "vlm")
    keyframes = sorted((tmp_path / "candidates" / "it1-c0" / "keyframes").glob("*.png"))
    assert len(keyframes) == judge["n_frames"]  # what the VLM was shown, saved in the candidate folder
    if keyframes:
        import imageio.v3 as iio

        assert iio.imread(keyframes[0]).shape == (224, 224, 3) and keyframes[0].name == "00_step0000.png"
    feedback = (tmp_path / "candidates" / "it1-c0" / "feedback.txt").read_text()
    assert feedback.startswith(f"Judge ({mode}:")
    prompt = (tmp_path / "candidates" / "it2-c0" / "prompt.json").read_text()
    assert feedback.splitlines()[1] in json.loads(prompt)[-1]["content"]  # the verdict reaches the next prompt
    graph_file = tmp_path / "decomposition.json"
    first = json.loads((tmp_path / "candidates" / "it1-c0" / "prompt.json").read_text())[1]["content"]
    if "+choice=no_decomposition" in overrides:
        assert not graph_file.exists() and "Task graph" not in first
    else:
        record = json.loads(graph_file.read_text())
        assert record["valid"] and "Task graph" in first
        shown = record["prompt"][1]["content"]
        assert ("Example task" in shown) == (record["n_examples"] > 0)
    assert any("state_text" in s for s in result["substitutes"]) == (mode == "state_text")
