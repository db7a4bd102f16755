"""REvolve, RF-Agent, R* and Text2Reward zero-shot as configurations: every value is cited, bird.diff shows only keys
the method files set, and their shared smoke searches leave the records each mechanism promises."""

import itertools
import json
import math
import re

import pytest
import yaml

from bird.config.load import CONF_DIR
from bird.diff import method_diff

NEW = ("revolve", "rf_agent", "rstar", "t2r_zeroshot")
TREE_ACTIONS = {"mutation_mechanism", "mutation_param", "crossover_elite", "path_reasoning", "different_thought"}


def _set_keys(method: str) -> set[str]:
    """Dotted keys a method file sets (a dict value counts as its own key and its entries')."""
    data = yaml.safe_load((CONF_DIR / "method" / f"{method}.yaml").read_text())

    def walk(node, prefix=""):
        for k, v in node.items():
            yield prefix + k
            if isinstance(v, dict):
                yield from walk(v, prefix + k + ".")

    return set(walk(data))


@pytest.mark.parametrize("method", NEW)
def test_every_value_a_new_method_sets_carries_a_citation(method):
    lines = (CONF_DIR / "method" / f"{method}.yaml").read_text().splitlines()
    values = [line for line in lines if re.match(r"^\s+\w+:\s*\S", line) and not line.lstrip().startswith("-")]
    assert values
    uncited = [line for line in values if not re.search(r"#.*(\.yaml|paper_cell\.py|evaluation\.py|tree\.py|BIRD Table|\[ours\]|\[INF\]|zero-shot|"
                                                         r"nothing|no loop|one candidate|methods/)", line)]
    assert not uncited, "\n".join(uncited)


@pytest.mark.parametrize("a,b", [*(("eureka", m) for m in NEW[:3]), *itertools.combinations(NEW[:3], 2)])
def test_diff_shows_only_keys_the_two_method_files_set(a, b):
    allowed = {"method", "substitutes"} | _set_keys(a) | _set_keys(b)
    diff = method_diff(a, b)
    assert diff and set(diff) <= allowed, sorted(set(diff) - allowed)


def test_diff_of_the_meta_world_zero_shot_baseline_against_eureka():
    diff = method_diff("eureka", "t2r_zeroshot", ["env=metaworld/push"])
    allowed = {"method", "substitutes"} | _set_keys("eureka") | _set_keys("t2r_zeroshot")
    assert set(diff) <= allowed and {"generate.env_representation", "generate.n_candidates", "loop.iterations"} <= set(diff)


@pytest.mark.parametrize("other", ["card", "zeroshot"])
def test_diff_with_a_suite_bound_method_runs_on_a_task_both_run_on(other):
    """t2r_zeroshot is written for Meta-World only: without env= the diff is taken on a Meta-World task (was: the
    default hopper was refused)."""
    from bird.diff import shared_env

    assert shared_env(other, "t2r_zeroshot") == "metaworld/button_press_topdown" and shared_env("eureka", "rstar") is None
    diff = method_diff(other, "t2r_zeroshot")
    allowed = {"method", "substitutes"} | _set_keys(other) | _set_keys("t2r_zeroshot")
    assert set(diff) <= allowed and diff["generate.prompt"] == (other if other != "zeroshot" else "eureka", "t2r_zeroshot")


def _candidates(run):
    return {p.parent.name: json.loads(p.read_text()) for p in (run / "candidates").glob("*/candidate.json")}


@pytest.mark.slow
def test_revolve_smoke_search_records_islands_and_returns_an_archive_member(method_smoke_run):
    run, result = method_smoke_run("revolve")
    lines = [json.loads(line) for line in (run / "islands.jsonl").read_text().splitlines()]
    assert [x["iteration"] for x in lines] == [1, 2] and len(lines[-1]["islands"]) == 13
    members = {c for island in lines[-1]["islands"] for c in island}
    assert result["returned"]["candidate_id"] in members
    cands = _candidates(run)
    assert {c["operator"] for c in cands.values() if c["iteration"] == 2} <= {"mutation", "crossover"}
    assert all(c["parent_id"] in members | {cid for cid in cands if cid.startswith("it1")}
               for c in cands.values() if c["iteration"] == 2)


@pytest.mark.slow
def test_rf_agent_smoke_search_expands_the_tree_with_actions_thoughts_and_self_verification(method_smoke_run):
    run, result = method_smoke_run("rf_agent")
    cands = _candidates(run)
    second = [c for c in cands.values() if c["iteration"] == 2]
    assert second and all(c["operator"] in TREE_ACTIONS and c["parent_id"].startswith("it1") for c in second)
    for cid in cands:
        if cands[cid]["status"] == "trained":
            assert (run / "candidates" / cid / "thought.json").exists()
            assert -1 <= json.loads((run / "candidates" / cid / "self_verify.json").read_text())["rating"] <= 1
    assert (run / "candidates" / "it1-c0" / "response.txt").read_text().startswith("{")


@pytest.mark.slow
def test_rstar_smoke_search_crosses_parents_aligns_literals_and_keeps_its_critics(method_smoke_run):
    run, result = method_smoke_run("rstar")
    cands = _candidates(run)
    crossed = {cid: c for cid, c in cands.items() if c["operator"] == "module_insert"}
    assert crossed
    for cid, c in crossed.items():  # a child trained from two parents, or a recorded reason why there is none
        record = json.loads((run / "candidates" / cid / "crossover.json").read_text())
        if c["status"] == "trained":
            assert len(c["co_parents"]) == 1 and record["draws"][-1]["ok"]
        else:
            assert c["failure"]["kind"] in ("skipped", "operator_error", "runtime_error", "non_finite")
            assert c["failure"]["kind"] == "skipped" or record["draws"]
            if c["failure"]["kind"] == "skipped":  # smoke's K = 2 leaves one sampled parent in iteration 1: said so
                assert c["failure"]["reason"] == ("no two ranked parents to cross: 1 ranked so far (the plan gives "
                                                  "crossover 1 of 2 slots, so 1 sampled per iteration)")
    critics = json.loads((run / "critics.json").read_text())
    assert len(critics) == 5 and all(c["ok"] for c in critics)
    aligned = [json.loads(p.read_text()) for p in (run / "candidates").glob("it2-*/alignment.json")]
    assert aligned and all("accuracy" in a and a["labels"]["critics_voting"] == 5 for a in aligned)
    assert math.isfinite(result["returned_score"])


@pytest.mark.slow
def test_t2r_zeroshot_smoke_search_checks_one_reward_and_trains_it_only_in_the_final_retrain(method_smoke_run):
    run, result = method_smoke_run("t2r_zeroshot")
    assert result["n_candidates"] == 1 and result["returned"]["candidate_id"] == "it1-c0"
    assert not (run / "candidates" / "it1-c0" / "curve.csv").exists() and math.isfinite(result["returned_score"])
    prompt = json.loads((run / "candidates" / "it1-c0" / "prompt.json").read_text())
    assert "Sawyer" in prompt[0]["content"] and "class Push" in prompt[1]["content"]


@pytest.mark.parametrize("suite,expected", [("metaworld", [True, False]), ("mujoco", [False, False])])
def test_stored_episodes_are_successes_only_where_the_score_is_a_success_flag(tmp_path, suite, expected):
    """BIRD Table 8 note a: CARD's trajectory screen reads Meta-World's success flag and passes every reward elsewhere
    (a store without successes is one-sided, so the screen passes)."""
    from types import SimpleNamespace

    import numpy as np

    from bird.components.trajectories import add_rollouts
    from bird.learners.rollouts import save_rollouts

    path = tmp_path / "rollouts.npz"
    save_rollouts(path, {"obs": np.zeros((4, 2)), "actions": np.zeros((4, 1)), "next_obs": np.zeros((4, 2)),
                         "episode": np.array([0, 0, 1, 1]), "score": np.array([1.0, 0.0])})  # hopper: 1.0 m/s
    state = SimpleNamespace(spec=SimpleNamespace(suite=suite), trajectories=None)
    add_rollouts(state, "c", str(path), 1.0)
    assert state.trajectories.success == expected


def test_bad_search_keys_fail_before_the_run_naming_each_key(compose_cfg):
    from bird.config.load import ConfigError

    with pytest.raises(ConfigError) as err:
        compose_cfg("method=rf_agent", "+tree.actions.jump=1", "generate.sampling=nosuch", "islands.migration_rate=2",
                    "crossover.operator=splice", "tree.best_weight=0.9")
    text = str(err.value)
    for needle in ("tree.actions: 'jump' is not a registered operator", "generate.sampling='nosuch'",
                   "islands.migration_rate=2", "crossover.operator='splice'", "tree.best_weight=0.9"):
        assert needle in text, needle
