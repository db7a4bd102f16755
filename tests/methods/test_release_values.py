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


# -- python -m bird.fidelity --check: every tagged value cites a release or a paper ------------------------------------

@pytest.mark.parametrize("method", fidelity.methods())
def test_every_value_tagged_paper_bird_both_or_release_cites_a_release_or_a_paper(method):
    assert fidelity.citation_problems(method) == []


def test_every_value_of_birds_matched_protocol_cites_a_release_or_a_paper():
    assert fidelity.protocol_citation_problems() == []


TABLE = """aliases:
  m.yaml: safety-research/bird@54a9ce3:configs/methods/m.yaml
  notes.md: some notes
rows:
- {key: method, value: m, source: the method's name, matches: both}
- {key: a, value: 1, source: 'safety-research/bird@54a9ce3:configs/methods/m.yaml a 1', matches: BIRD}
- {key: b, value: 1, source: 'm.yaml: b 1', matches: release}
- {key: c, value: 1, source: '§4.2 and Table 3', matches: paper}
- {key: d, value: 1, source: 'App. A.7 P0.1', matches: paper}
- {key: e, value: 1, source: "bird's default", matches: neither, note: a reason long enough}
- {key: f, value: 1, source: "bird's default", matches: BIRD}
- {key: g, value: 1, source: 'notes.md says so', matches: both}
- {key: h, value: 1, source: 'BIRD paper Table 9', matches: BIRD, own: {source: one candidate, matches: paper}}
- {key: i, value: 1, source: '/work/shared/papers/bird.txt Table 9', matches: paper}
- {key: j, value: 1, source: 'its file says so', matches: release}
"""


def test_the_citation_check_names_each_uncited_value_outside_path_and_false_alias(tmp_path, monkeypatch):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "fidelity.yaml").write_text(TABLE)
    monkeypatch.setattr(fidelity, "METHODS_DIR", tmp_path)
    problems = fidelity.citation_problems("m")
    assert [p.split(": ")[1].split(" ")[0] if "alias" not in p else "alias" for p in problems] == [
        "alias", "f", "g", "h", "i", "j"]
    assert "alias 'notes.md'" in problems[0] and "h (own) is tagged 'paper'" in problems[3]
    assert "outside the project" in problems[4]


def test_fidelity_check_exits_one_when_a_value_cites_nothing(monkeypatch, capsys):
    monkeypatch.setattr(fidelity, "citation_problems", lambda m: [f"{m}: x is tagged 'BIRD' but cites nothing"]
                        if m == "rda" else [])
    assert fidelity.main(["--check"]) == 1
    assert "rda: x is tagged 'BIRD' but cites nothing" in capsys.readouterr().err


# -- labels ------------------------------------------------------------------------------------------------------------

def test_t2r_zeroshot_is_tagged_release_never_birds_matched_run(compose_cfg):
    table = fidelity.load_table("t2r_zeroshot")
    verdicts = {v.matches for row in table.rows.values() for v in (row.verdict, row.own) if v is not None}
    assert verdicts == {"release", "neither"}
    labels = fidelity.config_substitutes(compose_cfg("method=t2r_zeroshot", "env=metaworld/push", "budget=matched"))
    assert any("evaluates 10 (evaluate.checkpoint_eval_episodes 10)" in s for s in labels)


def test_revolve_repairs_follow_birds_paper_with_the_releases_ten_as_a_choice(compose_cfg):
    row = fidelity.load_table("revolve").rows["generate.parse_retries"]
    assert (row.value, row.verdict.matches) == (0, "paper") and "BIRD paper Table 9" in row.verdict.source
    assert compose_cfg("method=revolve").generate.parse_retries == 0
    release = compose_cfg("method=revolve", "+choice=revolve_release_repairs")
    assert (release.generate.parse_retries, release.generate.repair) == (10, "blind")
    assert set(release.generate.resample_on) == {"parse_error", "compile_error", "rejected", "bad_signature"}


def test_rf_agents_missing_training_time_repair_is_a_labelled_substitute(compose_cfg):
    labels = fidelity.config_substitutes(compose_cfg("method=rf_agent"))
    assert any("train.on_runtime_error repair" in s and "no repair after a training-time error" in s for s in labels)
    readme = (fidelity.METHODS_DIR / "rf_agent" / "README.md").read_text()
    assert "rf_agent.yaml train.on_runtime_error repair" in readme  # the rendered substitutes list


# -- ERA-S as the release runs it: no judge scores, the native fitness and a rollout digest shown -----------------------

def test_era_s_judges_nothing_and_its_choice_restores_the_judged_feedback(compose_cfg):
    from bird.config.needs import needs_judgement
    from bird.diff import method_diff

    cfg = compose_cfg("method=era_s")
    assert not needs_judgement(cfg) and cfg.feedback.format == "fitness_digest" and cfg.feedback.show_score
    judged = compose_cfg("method=era_s", "+choice=era_s_judged_feedback")
    assert needs_judgement(judged) and not judged.feedback.show_score
    diff = method_diff("era_u", "era_s", extra_b=["+choice=era_s_judged_feedback"])
    assert diff.pop("choices") == ([], ["era_s_judged_feedback"])
    assert diff == {"method": ("era_u", "era_s"), "feedback.fitness": ("judge_score", "native")}


def _digest(compose_cfg, tmp_path, env: str, *overrides: str):
    import numpy as np

    from bird.envs.registry import make_adapter
    from bird.learners.rollouts import save_rollouts
    from bird.registry import get
    from bird.state import Plan, SearchState
    from bird.types import Candidate, Checkpoint, TrainResult

    cfg = compose_cfg("method=era_s", f"env={env}", *overrides)
    state = SearchState(make_adapter(cfg.env).spec, Plan(1, 2, 10, 10, 1, 1), 0, {})
    obs = np.zeros((30, state.spec.obs_index.dim))
    save_rollouts(tmp_path / "rollouts.npz", {
        "obs": obs, "actions": np.zeros((30, state.spec.action_dim)), "next_obs": obs,
        "episode": np.repeat([0, 1, 2], 10), "reward": np.repeat([1.0, 0.5, 0.0], 10),
        "score": np.array([1.0, 0.0, 1.0]), "quantity": np.zeros(3), "length": np.array([10, 10, 10])})
    curve = tuple(Checkpoint(s, sc, 0.0, 1.0, ref, 10.0, eval_reference_return=ref)
                  for s, sc, ref in ((100, 0.2, 40.0), (200, 2 / 3, 55.0)))
    res = TrainResult("it1-c0", 0, curve, 200, 1.0, rollouts_path=str(tmp_path / "rollouts.npz"))
    cand = Candidate(id="it1-c0", iteration=1, index=0, messages=[])
    return get("feedback_format", cfg.feedback.format)(cfg, state, cand, res)


def test_era_s_feedback_shows_the_native_fitness_and_each_rollouts_digest(compose_cfg, tmp_path):
    text, stats = _digest(compose_cfg, tmp_path, "metaworld/push")
    assert text.splitlines()[0] == "The policy trained with this reward: fitness 0.6667 (source native, final checkpoint)."
    assert "  rollout 1: success=True length=10 return=10.000 mean_per_step=1.000" in text
    assert "  rollout 2: success=False length=10 return=5.000 mean_per_step=0.500" in text
    text, stats = _digest(compose_cfg, tmp_path, "mujoco/hopper")  # no success flag; native = the reference return
    assert "fitness 55.0000 (source native, final checkpoint)" in text and "success" not in text
    text, _ = _digest(compose_cfg, tmp_path, "mujoco/hopper", "feedback.show_score=false")
    assert "fitness" not in text and "rollout 3: length=10 return=0.000" in text
