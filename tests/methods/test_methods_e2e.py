"""Whole offline GRACE and CARD searches (budget=smoke), their run-directory records, bird.diff, blind resamples."""

import json
import math

import pytest

from bird.diff import method_diff
from bird.loop import search

SMALL_DEMOS = ["demos.n_expert=2", "demos.n_negative=2", "demos.max_train=2"]


@pytest.mark.slow
def test_grace_smoke_search_records_population_and_fitness(compose_cfg, tmp_path):
    cfg = compose_cfg("method=grace", "env=metaworld/reach", *SMALL_DEMOS, "budget.max_candidates=3")
    result = search(cfg, tmp_path)
    assert math.isfinite(result["returned_score"]) and result["n_failed"] == 0
    gens = [json.loads(line) for line in (tmp_path / "population.jsonl").read_text().splitlines()]
    assert [g["iteration"] for g in gens] == [1, 2] and all(len(g["members"]) == 3 for g in gens)
    best = [g["members"][0]["fitness"] for g in gens]
    assert best[1] >= best[0]  # (μ+λ): the best never gets worse
    metrics = gens[-1]["members"][0]["metrics"]
    assert {"demo_airl", "demo_pairwise", "demo_airl_test", "demo_pairwise_test"} <= set(metrics)
    child = json.loads((tmp_path / "candidates" / "it2-c0" / "candidate.json").read_text())
    assert child["parent_id"] in {m["id"] for m in gens[0]["members"]}
    prompt = json.loads((tmp_path / "candidates" / "it2-c0" / "prompt.json").read_text())[-1]["content"]
    assert "Incorrect" in prompt and "class Reward" in prompt and "push" not in prompt.lower()
    assert json.loads((tmp_path / "demos.json").read_text())["train"]["episodes"] == 2
    assert result["env_steps"] == cfg.budget.final_env_steps  # no RL inside the generations


@pytest.mark.slow
def test_card_smoke_search_records_tpe_verdicts_and_returns_the_final_incumbent(compose_cfg, tmp_path):
    cfg = compose_cfg("method=card", "env=metaworld/reach", "train.collect_episodes=2", "budget.max_iterations=3")
    result = search(cfg, tmp_path)
    assert math.isfinite(result["returned_score"])
    verdicts = [json.loads(line) for line in (tmp_path / "screens.jsonl").read_text().splitlines()]
    assert [v["id"] for v in verdicts] == ["it1-c0", "it2-c0"]  # the last generation is not screened
    assert verdicts[0]["vacuous"] and verdicts[0]["training"] == "attempted"
    assert all(v["training"] == ("attempted" if v["pass"] else "skipped") for v in verdicts)
    assert result["returned"]["candidate_id"] == "it3-c0"  # never trained in the loop
    assert not (tmp_path / "candidates" / "it3-c0" / "curve.csv").exists()
    prompt = json.loads((tmp_path / "candidates" / "it3-c0" / "prompt.json").read_text())
    assert [m["role"] for m in prompt] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert (tmp_path / "candidates" / "it1-c0" / "rollouts.npz").exists()


@pytest.mark.parametrize("method,keys", [
    ("grace", {"reward.contract", "select.rule", "feedback.fitness", "demos.positive_states", "demos.enabled",
               "generate.parent"}),
    ("card", {"generate.history", "verify.screens", "select.returned", "feedback.screened_format",
              "generate.n_candidates", "loop.feedback_on_last"}),
])
def test_diff_against_eureka_names_the_design_choices(method, keys):
    assert keys <= set(method_diff(method, "eureka", ["env=metaworld/push"]))  # GRACE needs scripted-expert demos


def test_invalid_code_is_resampled_blind(compose_cfg):
    from bird.envs.registry import make_adapter
    from bird.llm.base import Generator, Request, Response
    from bird.reward.checks import random_transitions
    from bird.stages.generate import generate
    from bird.state import Plan, SearchState

    class FlakyGenerator(Generator):
        def complete(self, request: Request) -> Response:
            body = "next_obs['nope']" if request.sample_index == 0 else "next_obs['hinge_angle']"
            assert "Traceback" not in str(request.messages)  # blind: the error is never shown
            return Response(f"```python\ndef compute_reward(obs, action, next_obs, info):\n    return {body}, {{}}\n```",
                            "flaky")

    cfg = compose_cfg("env=mujoco/inverted_pendulum", "generate.parse_retries=2",
                      "generate.resample_on=[parse_error,runtime_error]")
    adapter = make_adapter(cfg.env)
    state = SearchState(adapter.spec, Plan(1, 1, 10, 10, 1, 1), 0, random_transitions(adapter, 8, 0))
    state.iteration = 1
    [cand] = generate(cfg, state, FlakyGenerator("flaky"))
    assert cand.alive and cand.attempts == 2 and cand.verified is not None and cand.verified.ok
