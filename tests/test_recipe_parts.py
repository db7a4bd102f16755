"""Parts of BIRD's recipes that run without training: the weighted-components contract, the demonstration verifier,
and the offline baseline's answers to subtask-list and summary requests (read from the request alone)."""

import json

import numpy as np
import pytest

from bird.config.schema import EnvConfig
from bird.envs.demos import env_config
from bird.envs.registry import make_adapter
from bird.llm.offline import OfflineSynthesiser
from bird.llm.offline.judge_synth import answer_revision, answer_subtasks, answer_summary
from bird.llm.offline.terms import Term, render_program
from bird.prompts import obs_fields_context
from bird.reward.checks import random_transitions, verify_code
from bird.reward.sandbox import RewardProgramError, SandboxedReward
from bird.stages.generate import build_request
from bird.state import Plan, SearchState
from bird.types import Candidate

WEIGHTED = ("import numpy as np\nREWARD_WEIGHTS = {'up': 2.0, 'alive': 0.5}\n\n"
            "def compute_reward(obs, action, next_obs, info):\n    return {'up': -next_obs['hinge_angle'] ** 2, 'alive': 1.0}\n")


@pytest.fixture(scope="module")
def pendulum():
    return make_adapter(EnvConfig(id="mujoco/inverted_pendulum", description="x"))


def test_weighted_components_reward_is_the_weighted_sum_of_unweighted_components(pendulum):
    x = np.random.default_rng(0).normal(size=(5, pendulum.spec.obs_index.dim))
    with SandboxedReward(WEIGHTED, pendulum.spec.obs_index, contract="weighted_components") as program:
        reward, comps = program(x, np.zeros((5, 1)), x)
        assert program.weights == {"up": 2.0, "alive": 0.5}
    np.testing.assert_allclose(reward, 2.0 * comps["up"] + 0.5)
    np.testing.assert_allclose(comps["up"], -x[:, 1] ** 2)


@pytest.mark.parametrize("code,kind,reason", [
    (WEIGHTED.replace("'alive': 0.5", "'alivee': 0.5"), "bad_output", "must match"),
    (WEIGHTED.replace("REWARD_WEIGHTS =", "W ="), "bad_signature", "REWARD_WEIGHTS"),
    (WEIGHTED.split("    return")[0] + "    return 1.0\n", "bad_output", "dict"),
    (WEIGHTED.replace("0.5}", "float('nan')}"), "runtime_error", "non-finite weight"),
])
def test_weighted_components_reject_mismatched_missing_or_bad_weights(pendulum, code, kind, reason):
    x = np.zeros((3, pendulum.spec.obs_index.dim))
    with pytest.raises(RewardProgramError) as err, \
            SandboxedReward(code, pendulum.spec.obs_index, contract="weighted_components") as program:
        program(x, np.zeros((3, 1)), x)
    assert err.value.failure.kind == kind and reason in err.value.failure.reason


@pytest.mark.parametrize("weights", [{"up": float("inf")}, {"up": "2"}, [1.0], {f"c{i}": 1.0 for i in range(65)}])
def test_the_host_refuses_weights_no_worker_should_send(pendulum, monkeypatch, weights):
    """Defence in depth: the worker checks REWARD_WEIGHTS; a reply it could not have sent is refused by the host too."""
    from bird.reward import sandbox

    monkeypatch.setattr(sandbox.WorkerProcess, "request", lambda self, *a, **k: ({"ok": True, "weights": weights}, b""))
    with pytest.raises(RewardProgramError, match=r"REWARD_WEIGHTS( must|=inf is)"):
        SandboxedReward(WEIGHTED, pendulum.spec.obs_index, contract="weighted_components")


def test_offline_weighted_programs_pass_the_checks_and_match_the_summed_form(compose_cfg, pendulum):
    terms = [Term("upright", "upright", ("hinge_angle",), 3.0), Term("alive", "alive", (), 0.5)]
    cfg = compose_cfg("method=rda", "env=mujoco/inverted_pendulum")
    batch = random_transitions(pendulum, 16, 0)
    weighted, summed = render_program(terms, "t", weighted=True), render_program(terms, "t")
    assert verify_code(weighted, cfg, batch, pendulum.spec).ok
    with SandboxedReward(weighted, pendulum.spec.obs_index, contract="weighted_components") as a, \
            SandboxedReward(summed, pendulum.spec.obs_index) as b:
        ra, _ = a(batch["obs"], batch["actions"], batch["next_obs"])
        rb, _ = b(batch["obs"], batch["actions"], batch["next_obs"])
    np.testing.assert_allclose(ra, rb)


@pytest.mark.parametrize("sign,screened", [("-", False), ("", True)])
def test_demo_margin_screens_a_reward_that_prefers_random_play_to_the_expert(compose_cfg, sign, screened):
    from bird.stages.verify import verify

    cfg = compose_cfg("method=hillclimb/v2_verify_noes", "env=metaworld/push")
    code = ("import numpy as np\nREWARD_WEIGHTS = {'d': 1.0}\n\ndef compute_reward(obs, action, next_obs, info):\n"
            f"    return {{'d': {sign}np.linalg.norm(next_obs['puck_pos'] - next_obs['goal_pos'], axis=-1)}}\n")
    state = SearchState(make_adapter(env_config("metaworld/push")).spec, Plan(1, 1, 10, 10, 1, 1), 0,
                        {"obs": np.zeros((4, 39)), "actions": np.zeros((4, 4)), "next_obs": np.zeros((4, 39))})
    cand = Candidate("it1-c0", 1, 0, [], code=code)
    verdict = verify(cfg, state, [cand])[cand.id].checks["demo_margin"]
    assert cand.screened is screened and (verdict["margin"] > 0) is not screened
    assert set(verdict["mean_return"]) == {"expert", "random"} and len(verdict["returns"]["expert"]) == 2
    assert any("uniform-random" in s for s in state.substitutes)


def test_demo_margin_passes_and_says_so_on_a_suite_without_an_expert(compose_cfg, pendulum):
    from bird.components.demo_margin import _demo_margin

    cfg = compose_cfg("method=hillclimb/v2_verify_noes", "env=mujoco/inverted_pendulum")
    state = SearchState(pendulum.spec, Plan(1, 1, 10, 10, 1, 1), 0, {})
    failure, verdict = _demo_margin(Candidate("c", 1, 0, [], code=WEIGHTED), cfg, state)
    assert failure is None and "no scripted expert" in verdict["skipped"]


def test_offline_subtask_lists_come_from_the_fields_and_task_words():
    push = make_adapter(env_config("metaworld/push")).spec
    ctx = {"task": push.description, "obs_fields": obs_fields_context(push)}
    subs = json.loads(answer_subtasks(ctx, "L").split("```json\n")[1].split("```")[0])["subtasks"]
    assert [s["done_when"] for s in subs] == ["norm(hand_pos - puck_pos) < 0.06", "norm(puck_pos - goal_pos) < 0.06"]
    hopper = make_adapter(env_config("mujoco/hopper")).spec
    subs = json.loads(answer_subtasks({"task": hopper.description, "obs_fields": obs_fields_context(hopper)}, "L")
                      .split("```json\n")[1].split("```")[0])["subtasks"]
    assert [s["name"] for s in subs] == ["move forward", "stay upright"]


def test_offline_revision_tightens_only_what_the_shown_scores_call_achieved():
    subs = [{"name": "a", "description": "", "done_when": "norm(x - y) < 0.1"},
            {"name": "b", "description": "", "done_when": "norm(y - z) < 0.1"}]
    ctx = {"subtasks": subs, "feedback": {"subtasks": [{"name": "a", "score": 1.0}, {"name": "b", "score": 0.5}]}}
    out = json.loads(answer_revision(ctx, "L").split("```json\n")[1].split("```")[0])
    assert [s["done_when"] for s in out["subtasks"]] == ["norm(x - y) < 0.08", "norm(y - z) < 0.1"]


def test_offline_summary_reads_only_the_statistics_it_is_shown():
    fb = {"components": {"flat": [1.0, 1.0, 1.0], "big": [50.0, 90.0, 10.0], "small": [0.1, 0.3, 0.2]},
          "task_score": [0.0, 0.01]}
    text = answer_summary({"feedback": fb, "subtask": None}, "L")
    assert "Component flat barely changes." in text and "Component big dominates the reward." in text
    assert "task score stays near zero" in text
    assert "near zero" not in answer_summary({"feedback": {"components": fb["components"]}, "subtask": None}, "L")


def test_offline_mutation_reads_the_cues_of_a_summarised_feedback(compose_cfg, pendulum):
    cfg = compose_cfg("method=eureka", "env=mujoco/inverted_pendulum")
    state = SearchState(pendulum.spec, Plan(1, 2, 10, 10, 1, 1), 0, {})
    state.iteration = 1
    first = OfflineSynthesiser("o").complete(build_request(cfg, state, 0))
    parent = first.text.split("```python\n")[1].split("```")[0]
    from bird.llm.offline.mutation import mutate
    from bird.llm.offline.proposals import parent_terms

    terms = parent_terms(parent)
    flat = next(t for t in terms if t.kind != "alive")
    summary = {"summary": [{"summary": f"Component {flat.name} barely changes."}]}
    out = mutate({"feedback": summary, "obs_fields": obs_fields_context(pendulum.spec), "task": pendulum.spec.description},
                 terms, __import__("random").Random(0))
    changed = next(t for t in out if t.name == flat.name)
    assert (changed.weight, changed.temp) != (flat.weight, flat.temp)
