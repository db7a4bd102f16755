"""BIRD's recipes (RDA, ERA-U, ERA-S) resolve the judge's temperature and the reasoning effort to the release's values
under budget=matched, and `python -m bird.fidelity` shows them with their citations."""

from __future__ import annotations

import pytest

from bird import fidelity
from bird.config.roles import judge_temperature

RECIPES = ["rda", "era_u", "era_s"]
RELEASE = "safety-research/bird@54a9ce3:"


@pytest.mark.parametrize("method", RECIPES)
def test_bird_recipes_judge_and_generate_as_the_release_under_budget_matched(compose_cfg, method):
    cfg = compose_cfg(f"method={method}", "budget=matched")
    assert (cfg.llm.reasoning_effort, cfg.judge.reasoning_effort, cfg.judge.temperature) == ("medium", "medium", 1.0)
    own = compose_cfg(f"method={method}")  # own budget: the judge inherits the generator's settings
    assert (own.llm.reasoning_effort, own.judge.reasoning_effort, own.judge.temperature) == ("medium", None, None)
    assert judge_temperature(own) == own.generate.temperature == 1.0


def test_budget_matched_keeps_the_releases_judge_temperature_when_the_generators_changes(compose_cfg):
    cfg = compose_cfg("method=era_u", "budget=matched", "generate.temperature=0.7")
    assert judge_temperature(cfg) == 1.0
    assert judge_temperature(compose_cfg("method=era_u", "generate.temperature=0.7")) == 0.7


@pytest.mark.parametrize("method", RECIPES)
def test_the_fidelity_report_shows_the_judges_temperature_and_effort_with_release_citations(capsys, method):
    assert fidelity.main([method, "budget=matched"]) == 0
    out = capsys.readouterr().out
    for line in ("judge.temperature = 1.0\n    [BIRD] " + RELEASE + "bird/components/evaluation.py",
                 "judge.reasoning_effort = medium\n    [BIRD] " + RELEASE + "bird/components/evaluation.py",
                 "llm.reasoning_effort = medium\n    [BIRD] " + RELEASE + "configs/methods/rda.yaml"):
        assert line in out


@pytest.mark.parametrize("method", RECIPES)
def test_bird_recipes_load_on_a_provider_that_takes_only_temperature_one_while_thinking(compose_cfg, method):
    cfg = compose_cfg(f"method={method}", "budget=matched", "llm=anthropic")
    assert cfg.llm.reasoning_effort == "medium" and judge_temperature(cfg) == 1.0
