"""RE-GoT and PRM4RL end to end (offline, budget=smoke, short horizon), their ablations, and the task-graph schema."""

import copy
import json
import math

import pytest

from bird.components.decompose import graph_problems
from bird.llm.base import Generator, Request, Response
from bird.loop import search
from bird.registry import register

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
    assert (judge["n_frames"] > 0) == (mode == "vlm") and judge["n_rollouts"] == cfg.train.collect_episodes == 2
    keyframes = sorted((tmp_path / "candidates" / "it1-c0" / "keyframes").glob("*.png"))
    assert len(keyframes) == judge["n_frames"]  # what the VLM was shown, saved in the candidate folder
    if mode == "vlm":  # keyframes of every rollout, not only the first
        import imageio.v3 as iio

        assert judge["n_frames"] == 2 * cfg.feedback.judge_keyframes and "of the 2 rollouts" in str(judge["prompt"])
        assert {k.name.split("_")[1] for k in keyframes} == {"rollout0", "rollout1"}
        assert iio.imread(keyframes[0]).shape == (224, 224, 3) and keyframes[0].name == "00_rollout0_step0000.png"
    else:
        assert "Rollout 1 (" in str(judge["prompt"]) and "Rollout 2 (" in str(judge["prompt"])
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
    assert any(s.startswith("judge=state_text") for s in result["substitutes"]) == (mode == "state_text")
    assert any("RE-GoT (VLM=bird-offline-synth-v1 (offline synthesiser" in s for s in result["substitutes"])
    assert not any("{judge_model}" in s for s in result["substitutes"])


class _FallingFirst(Generator):
    """Test double at the LLM boundary: the first answer's Φ falls along the expert (the screen rejects it), later
    answers are the offline synthesiser's program."""

    provider = "scripted-test"

    def complete(self, request: Request) -> Response:
        from bird.llm.offline.plan_synth import answer_progress

        good = answer_progress(request.context, "scripted")
        falling = good.replace("return (k + own) / len(plan_list)", "return 1.0 - (k + own) / len(plan_list)")
        assert falling != good
        return Response(falling if request.sample_index == 0 else good, self.model)


register("llm", "falling_first_test")(lambda cfg: _FallingFirst(cfg.model))


@pytest.mark.slow
def test_prm4rl_re_asks_a_screened_program_and_trains_the_next(compose_cfg, tmp_path):
    cfg = compose_cfg("method=prm4rl", *FAST, "llm.backend=falling_first_test")
    result = search(cfg, tmp_path)
    record = json.loads((tmp_path / "candidates" / "it1-c0" / "candidate.json").read_text())
    assert record["attempts"] == 2 and [r["kind"] for r in record["resampled"]] == ["screened"]
    assert "Φ is not roughly non-decreasing" in record["resampled"][0]["reason"]
    assert result["llm_calls"] == 2 and math.isfinite(result["returned_score"]) and result["no_return_reason"] is None
    assert any("addition, not in the paper: the progress_expert screen" in s for s in result["substitutes"])


@pytest.mark.slow
def test_prm4rl_whose_every_program_is_screened_ends_failed_with_the_reason(compose_cfg, tmp_path):
    cfg = compose_cfg("method=prm4rl", *FAST, "verify.progress_bound=1e-9")
    result = search(cfg, tmp_path)
    assert result["status"] == "failed" and result["returned"] is None and result["returned_score"] is None
    assert result["llm_calls"] == 1 + cfg.generate.parse_retries and result["env_steps"] == 0
    assert "it1-c0: screened after 3 attempt(s): progress screen" in result["no_return_reason"]
    assert result["status_reason"] == result["no_return_reason"]
    status = json.loads((tmp_path / "status.json").read_text())
    assert status["state"] == "failed" and status["error"] == result["status_reason"]
