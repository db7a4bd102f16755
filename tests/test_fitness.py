"""Fitness sources: feedback.fitness=native ranks on each suite's native signal (BIRD Table 8 note b)."""

import csv
import dataclasses
import json

import pytest

from bird.components.fitness import Evidence, resolve_fitness
from bird.config.validate import validate
from bird.registry import get
from bird.types import Checkpoint

# benchmark score rises while the reference return falls, so the two signals pick different checkpoints
CURVE = (Checkpoint(1000, 0.10, 0.0, 1.0, 50.0, 10.0), Checkpoint(2000, 0.40, 0.0, 1.0, 20.0, 10.0))
MW_FAST = ("env.horizon=100", "budget.env_steps=512", "budget.final_env_steps=512")  # shared with test_leaks.py


@pytest.mark.parametrize("suite,value,source", [
    ("mujoco", 50.0, "reference_return"), ("brax", 50.0, "reference_return"), ("metaworld", 0.40, "benchmark_score")])
def test_native_fitness_is_the_reference_return_except_on_metaworld(suite, value, source):
    ev = Evidence(CURVE, "max", suite=suite)
    assert get("fitness", "native")(ev) == value
    assert resolve_fitness("native", suite) == source
    assert resolve_fitness("benchmark_score", suite) == "benchmark_score"


def test_the_reference_return_is_the_greedy_evaluation_episodes_when_the_learner_measured_it(compose_cfg):
    """As BIRD's release records gt_return on its greedy checkpoint evaluations; the training-episode window
    (reference_return) only when a learner measures no evaluation value."""
    measured = tuple(dataclasses.replace(c, eval_reference_return=v) for c, v in zip(CURVE, (7.0, 9.0), strict=True))
    assert get("fitness", "native")(Evidence(measured, "max", suite="mujoco")) == 9.0
    assert get("fitness", "native")(Evidence(measured, "final", suite="mujoco")) == 9.0
    assert get("fitness", "native")(Evidence(CURVE, "final", suite="mujoco")) == 20.0  # not measured: the window


@pytest.mark.parametrize("shown,suite,values", [("native", "mujoco", [7.0, 9.0]), ("native", "metaworld", [0.10, 0.40]),
                                                ("benchmark_score", "mujoco", [0.10, 0.40]),
                                                ("reference_return", "metaworld", [7.0, 9.0])])
def test_the_score_shown_is_the_suites_native_signal_or_the_one_named(compose_cfg, shown, suite, values):
    from bird.components.fitness import shown_scores

    measured = tuple(dataclasses.replace(c, eval_reference_return=v) for c, v in zip(CURVE, (7.0, 9.0), strict=True))
    cfg = compose_cfg("method=eureka", f"feedback.score_shown={shown}")
    assert shown_scores(cfg.feedback.score_shown, suite, measured) == values


def test_native_fitness_refuses_a_suite_without_a_native_signal(compose_cfg):
    cfg = compose_cfg("method=eureka")
    problems = validate(dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, id="toy/x")))
    assert any("no native signal for suite 'toy'" in p for p in problems), problems
    with pytest.raises(ValueError, match="known: \\['babyai', 'brax', 'gym', 'metaworld', 'mujoco'\\]"):
        resolve_fitness("native", "toy")


def test_eureka_ranks_natively_and_benchmark_score_is_a_choice(compose_cfg):
    assert compose_cfg("method=eureka").feedback.fitness == "native"
    assert compose_cfg("method=eureka", "+choice=benchmark_score_fitness").feedback.fitness == "benchmark_score"


def _column(run, cid: str, name: str) -> list[float]:
    with open(run / "candidates" / cid / "curve.csv") as fh:
        return [float(row[name]) for row in csv.DictReader(fh)]


@pytest.mark.slow
@pytest.mark.parametrize("env,source,column", [
    ("mujoco/inverted_pendulum", "reference_return", "eval_reference_return"),
    ("metaworld/reach", "benchmark_score", "score")])
def test_eureka_smoke_search_ranks_on_the_suites_native_signal(smoke_run, env, source, column):
    run, result = smoke_run("method=eureka", f"env={env}", *(MW_FAST if env.startswith("metaworld") else ()))
    assert result["fitness_source"] == source
    records = [json.loads(p.read_text()) for p in sorted(run.glob("candidates/*/candidate.json"))]
    assert len(records) == 4
    for rec in records:
        assert rec["fitness_source"] == source
        assert rec["fitness"] == pytest.approx(max(_column(run, rec["id"], column)))
    for it in result["iterations"]:
        ranked = {r["id"]: r["fitness"] for r in records if r["iteration"] == it["iteration"]}
        assert it["best_fitness"] == max(ranked.values())
        assert ranked[it["best_candidate"]] == max(ranked.values())
