"""The demonstration set's bookkeeping: episode boundaries, joining sets, the train/test split, which expert states
are positives under each labelling rule, scoring a candidate (and recording a program that fails on the demos),
and the RL round that adds a trained policy's rollouts as negatives."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from bird.components.demos import DemoScores, DemoSet, Episodes
from bird.types import Candidate

BASE = ["budget=smoke", "run.progress=false", "method=grace", "env=metaworld/reach", "demos.n_expert=2",
        "demos.n_negative=2", "demos.max_train=null", "demos.positive_states=all"]
T = 500  # Meta-World horizon of the cached demos


def _eps(lengths: list[int], label: int, source: str) -> Episodes:
    n = sum(lengths)
    return Episodes(np.arange(n * 2, dtype=float).reshape(n, 2), np.repeat(np.arange(len(lengths)), lengths),
                    np.concatenate([np.arange(k) for k in lengths] or [np.zeros(0, int)]), np.full(n, label), [source] * len(lengths))


def test_dones_mark_the_last_row_of_each_episode():
    assert _eps([2, 3, 1], 1, "expert").dones.tolist() == [False, True, False, False, True, True]
    assert _eps([], 1, "expert").dones.tolist() == []


def test_extend_renumbers_the_appended_episodes_after_the_existing_ones():
    a, b = _eps([2, 1], 1, "expert"), _eps([1, 2], -1, "random")
    joined = a.extend(b)
    assert joined.episode.tolist() == [0, 0, 1, 2, 3, 3]
    assert joined.step.tolist() == [0, 1, 0, 0, 0, 1] and joined.label.tolist() == [1, 1, 1, -1, -1, -1]
    assert joined.source == ["expert", "expert", "random", "random"]
    np.testing.assert_array_equal(joined.states, np.concatenate([a.states, b.states]))
    empty = Episodes(np.zeros((0, 2)), np.zeros(0, dtype=int), np.zeros(0, dtype=int), np.zeros(0, dtype=int), [])
    assert empty.extend(b).episode.tolist() == [0, 1, 1]


def test_scores_split_into_positives_and_negatives_by_label():
    eps = Episodes(np.zeros((4, 1)), np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]), np.array([1, 0, -1, -1]),
                   ["expert", "random"])
    scores = DemoScores(eps, np.array([5.0, 6.0, 7.0, 8.0]))
    assert scores.positives.tolist() == [5.0] and scores.negatives.tolist() == [7.0, 8.0]  # the dropped 6.0 in neither


def test_describe_counts_each_split():
    demo = DemoSet(_eps([2, 3], 1, "expert").extend(_eps([4], -1, "random")), None, {"env": "x"})
    assert demo.describe() == {"env": "x", "train": {"episodes": 3, "positive_states": 5, "negative_states": 4,
                                                     "dropped_states": 0}, "test": {}, "sources": ["expert", "random"]}


def _load(compose_cfg, *overrides):
    from bird.components.demos import load_demo_set
    from bird.envs.registry import make_adapter
    from bird.llm.factory import make_generator

    cfg = compose_cfg(*BASE, *overrides)
    return cfg, load_demo_set(cfg, make_adapter(cfg.env).spec, make_generator(cfg.llm, cfg.budget))


def test_the_split_holds_out_whole_episodes_of_each_kind(compose_cfg):
    _, demos = _load(compose_cfg, "demos.test_fraction=0.5")
    for split in (demos.train, demos.test):
        assert split.source == ["expert", "random"]
        assert split.episode.tolist() == [0] * T + [1] * T and split.step.tolist() == list(range(T)) * 2
    assert not np.array_equal(demos.train.states[:T], demos.test.states[:T])  # different expert episodes
    described = demos.describe()
    assert described["train"] == described["test"] == {"episodes": 2, "positive_states": T, "negative_states": T,
                                                        "dropped_states": 0}
    assert described["n_expert"] == 2 and described["expert_success_rate"] == 1.0
    assert described["positive_states"] == "all" and described["negative_kind"] == "random"


def test_without_a_test_fraction_everything_is_train(compose_cfg):
    _, demos = _load(compose_cfg, "demos.test_fraction=0")
    assert demos.test is None and demos.describe()["test"] == {}
    assert demos.train.source == ["expert", "expert", "random", "random"] and len(demos.train.states) == 4 * T


@pytest.mark.parametrize("as_negative, other", [(True, -1), (False, 0)])
def test_last_state_rule_makes_only_each_expert_episodes_last_state_positive(compose_cfg, as_negative, other):
    _, demos = _load(compose_cfg, "demos.test_fraction=0", "demos.positive_states=last_state",
                     f"demos.unidentified_as_negative={str(as_negative).lower()}")
    label = demos.train.label.reshape(4, T)
    assert (label[:2, -1] == 1).all() and (label[:2, :-1] == other).all()  # expert episodes
    assert (label[2:] == -1).all()  # random episodes stay negative whatever the rule


def test_the_demo_set_records_how_it_was_built_and_splits_by_max_train(compose_cfg):
    """max_train=4: two train episodes of each kind, the other two test; the meta says what was loaded."""
    cfg, demos = _load(compose_cfg, "demos.n_expert=4", "demos.n_negative=4", "demos.max_train=4",
                       "demos.test_fraction=0", "demos.positive_states=goal_identified")
    assert demos.train.source == demos.test.source == ["expert", "expert", "random", "random"]
    goals = demos.meta.pop("goal_states")
    assert [g["episode"] for g in goals] == [0, 1, 2, 3] and all(g["goal_steps"] for g in goals)
    assert demos.meta == {"env": "metaworld/reach", "n_expert": 4, "n_negative": 4, "seed": cfg.demos.seed,
                          "negative_kind": "random", "positive_states": "goal_identified", "stride": cfg.demos.stride,
                          "n_shown": cfg.demos.n_shown, "max_train": 4, "max_train_expert": None,
                          "max_train_negative": None, "expert": "the task's scripted expert",
                          "expert_success_rate": 1.0, "negative_success_rate": 0.0}


@pytest.mark.parametrize("single, held_out, label", [("n_expert", "random", -1), ("n_negative", "expert", 1)])
def test_a_kind_with_no_held_out_episode_keeps_the_other_kinds_held_out_episodes(compose_cfg, single, held_out, label):
    _, demos = _load(compose_cfg, f"demos.{single}=1", "demos.test_fraction=0.5")  # the single episode trains
    assert demos.train.source == ["expert", "random"]
    assert demos.test is not None and demos.test.source == [held_out]  # the other kind's held-out episode is kept
    assert demos.test.episode.tolist() == [0] * T and (demos.test.label == label).all()
    assert demos.describe()["test"] == {"episodes": 1, "positive_states": T * (label > 0),
                                        "negative_states": T * (label < 0), "dropped_states": 0}
    assert "goal_states" not in demos.meta  # only goal_identified records goal states


def test_no_test_split_when_no_kind_holds_an_episode_out(compose_cfg):
    _, demos = _load(compose_cfg, "demos.n_expert=1", "demos.n_negative=1", "demos.test_fraction=0.5")
    assert demos.test is None and demos.train.source == ["expert", "random"]


GOOD = """
import numpy as np

class Reward:
    def __init__(self, extra_info=None):
        pass

    def reward_fn(self, state):
        return -float(np.linalg.norm(np.asarray(state['hand_pos']) - np.asarray(state['goal_pos'])))

    def debug_fn(self, state):
        return 'hand at ' + str(np.round(state['hand_pos'], 2))
"""
BROKEN = GOOD.replace("state['hand_pos']) - ", "state['no_such_field']) - ")


def _state(cfg, demos):
    from bird.envs.registry import make_adapter
    from bird.state import Plan, SearchState

    state = SearchState(make_adapter(cfg.env).spec, Plan(1, 1, 1024, 1024, 1, 1), 0, {})
    state.demos = demos
    return state


def test_score_candidate_scores_both_splits_with_debug_output_on_the_worst_states(compose_cfg):
    from bird.components.demos import score_candidate

    cfg, demos = _load(compose_cfg, "demos.test_fraction=0.5", "feedback.n_wrong_examples=4")
    state = _state(cfg, demos)
    cand = Candidate("it1-c0", 1, 0, [], code=GOOD)
    train, test = score_candidate(cfg, state, cand)
    assert state.demo_scores == {"it1-c0": train} and cand.failure is None
    assert train.episodes is demos.train and test.episodes is demos.test
    hand, goal = demos.test.states[:, 0:3], demos.test.states[:, 36:39]
    np.testing.assert_allclose(test.reward, -np.linalg.norm(hand - goal, axis=1), rtol=1e-6)
    assert len(train.debug) == 4 and all(v.startswith("hand at [") for v in train.debug.values())
    assert test.debug == {}


def test_a_program_that_fails_on_the_demos_is_recorded_and_scores_nothing(compose_cfg):
    from bird.components.demos import score_candidate

    cfg, demos = _load(compose_cfg, "demos.test_fraction=0.5")
    state = _state(cfg, demos)
    cand = Candidate("it1-c0", 1, 0, [], code=BROKEN)
    assert score_candidate(cfg, state, cand) == (None, None)
    assert cand.failure is not None and cand.failure.kind == "runtime_error" and state.demo_scores == {}


class _RecordingRun:
    def __init__(self, root):
        self.root, self.events = root, []

    def event(self, name, **fields):
        self.events.append((name, fields))


class _InProcessPool:
    """TrainPool's interface, running the real learner in this process (no worker start-up)."""

    def __init__(self):
        self.jobs = []

    def run(self, learner, jobs):
        from bird.registry import get

        self.jobs += jobs
        return [get("learner", learner)(job) for job in jobs]


def test_the_rl_round_adds_the_global_bests_rollouts_as_negative_episodes(compose_cfg, tmp_path):
    from bird.components.demos import expand_negatives

    cfg, demos = _load(compose_cfg, "demos.test_fraction=0", "env.horizon=100", "budget.env_steps=512",
                       "budget.eval_episodes=1", "train.collect_episodes=1", "train.n_epochs=1")
    state = _state(cfg, demos)
    state.plan = type(state.plan)(1, 1, 512, 512, 1, 1)
    state.iteration = 3
    run = _RecordingRun(tmp_path)
    pool = _InProcessPool()
    expand_negatives(cfg, state, pool, run)  # no global best yet: nothing happens
    assert run.events == [] and len(state.demos.train.source) == 4
    state.candidates["it2-c1"] = Candidate("it2-c1", 2, 1, [], code=GOOD)
    state.global_best = "it2-c1"
    (tmp_path / "expand" / "it3").mkdir(parents=True)  # left by an earlier try of this iteration: reused
    expand_negatives(cfg, state, pool, run)
    train = state.demos.train
    assert len(train.source) == 6, run.events
    assert train.source == ["expert", "expert", "random", "random", "learner:it2-c1", "learner:it2-c1"]
    new = train.episode >= 4
    assert new.sum() == 200 and (train.label[new] == -1).all()  # collect_episodes=1 is raised to 2
    assert train.step[new].tolist() == list(range(100)) * 2 and train.episode[new].tolist() == [4] * 100 + [5] * 100
    name, fields = run.events[-1]
    assert name == "negatives_expanded" and fields == {"candidate": "it2-c1", "added": 200, "episodes": 2}
    assert state.env_steps >= 512 and (tmp_path / "expand" / "it3" / "rollouts.npz").exists()
    assert (tmp_path / "expand" / "it3" / "curve.csv").exists()
    # trained on the global best's own reward (code None would mean the environment's reward)
    assert [(j.candidate_id, j.code) for j in pool.jobs] == [("expand-it3", GOOD)]


class _EndedPool:
    """TrainPool's interface for a learner that ended after `steps` environment steps with `failure` and maybe a
    rollouts path (no training here)."""

    def __init__(self, steps, failure, rollouts_path):
        self.steps, self.failure, self.rollouts_path, self.jobs = steps, failure, rollouts_path, []

    def run(self, learner, jobs):
        from bird.types import TrainResult

        self.jobs += jobs
        return [TrainResult(j.candidate_id, j.seed, (), self.steps, 0.1, self.failure, rollouts_path=self.rollouts_path)
                for j in jobs]


@pytest.mark.parametrize("crashed", [True, False])
def test_an_rl_round_without_rollouts_adds_its_steps_to_the_spent_ones_and_no_negatives(compose_cfg, tmp_path, crashed):
    """A learner that crashed (even after writing part of its rollouts) or collected none: the steps it used are
    spent on top of the earlier ones, the negatives stay as they were, and the event says why."""
    from bird.components.demos import expand_negatives
    from bird.types import Failure, FailureKind

    cfg, demos = _load(compose_cfg, "demos.test_fraction=0")
    state = _state(cfg, demos)
    state.env_steps, state.iteration = 1000, 2
    state.candidates["it1-c0"] = Candidate("it1-c0", 1, 0, [], code=GOOD)
    state.global_best = "it1-c0"
    failure = Failure(FailureKind.TRAIN_ERROR, "crashed") if crashed else None
    run = _RecordingRun(tmp_path)
    pool = _EndedPool(300, failure, str(tmp_path / "partial.npz") if crashed else None)
    expand_negatives(cfg, state, pool, run)
    assert state.env_steps == 1300
    assert state.demos.train.source == ["expert", "expert", "random", "random"]
    why = {"kind": "train_error", "reason": "crashed", "detail": ""} if crashed else None
    assert run.events == [("negatives_expanded", {"candidate": "it1-c0", "added": 0, "failure": why})]
    assert [j.candidate_id for j in pool.jobs] == ["expand-it2"]


def test_describe_counts_dropped_states_apart():
    eps = Episodes(np.zeros((5, 1)), np.array([0, 0, 0, 1, 1]), np.array([0, 1, 2, 0, 1]),
                   np.array([0, 0, 1, -1, -1]), ["expert", "random"])
    assert DemoSet(eps, None).describe()["train"] == {"episodes": 2, "positive_states": 1, "negative_states": 2,
                                                      "dropped_states": 2}


COUNTER = """
class Reward:
    def __init__(self, extra_info=None):
        self.t = 0

    def reward_fn(self, state):
        self.t += 1
        return float(self.t)
"""


def test_scoring_restarts_a_stateful_reward_at_every_episode(compose_cfg):
    from bird.components.demos import score_episodes
    from bird.envs.registry import make_adapter

    cfg = compose_cfg(*BASE)
    spec = make_adapter(cfg.env).spec
    eps = Episodes(np.zeros((6, spec.obs_index.dim)), np.array([0, 0, 0, 1, 1, 2]), np.array([0, 1, 2, 0, 1, 0]),
                   np.array([1, 1, 1, -1, -1, -1]), ["expert", "random", "random"])
    from bird.reward.factory import open_program

    with open_program(COUNTER, spec, cfg.verify, cfg.reward, bulk=True) as program:
        first = score_episodes(program, spec, eps)
        again = score_episodes(program, spec, eps)  # the same program, restarted at every pass's first episode
    assert first.reward.tolist() == again.reward.tolist() == [1.0, 2.0, 3.0, 1.0, 2.0, 1.0]
    assert first.episodes is eps and first.debug == {}


def test_without_a_test_split_only_the_train_split_is_scored(compose_cfg):
    from bird.components.demos import score_candidate

    cfg, demos = _load(compose_cfg, "demos.test_fraction=0", "feedback.n_wrong_examples=2")
    state = _state(cfg, demos)
    train, test = score_candidate(cfg, state, Candidate("it1-c0", 1, 0, [], code=GOOD))
    assert test is None and len(train.debug) == 2 and len(train.reward) == 4 * T


def _accuracy_state(reports: dict, returned: str | None, demos: object = "demos"):
    from types import SimpleNamespace

    return SimpleNamespace(demos=demos, returned=returned,
                           reports={cid: SimpleNamespace(stats=stats) for cid, stats in reports.items()})


def _accuracy_cfg(fitness: str, report_metrics: tuple = ()):
    from types import SimpleNamespace

    return SimpleNamespace(feedback=SimpleNamespace(fitness=fitness, report_metrics=list(report_metrics)))


def test_generation_accuracy_reports_the_returned_candidate_and_the_best_child_per_split():
    from bird.components.demos import REWARD_ACCURACY, generation_accuracy

    acc = REWARD_ACCURACY
    reports = {"it0-c0": {"metrics": {acc: 0.9, f"{acc}_test": 0.7}},
               "it1-c0": {"metrics": {acc: 0.6, f"{acc}_test": 0.8}},
               "it1-c1": {"metrics": {acc: 0.75}},  # no held-out figure
               "it1-c2": {}}  # no metrics at all
    cands = [Candidate(c, 1, i, []) for i, c in enumerate(["it1-c0", "it1-c1", "it1-c2", "it1-c3"])]  # c3: no report
    got = generation_accuracy(_accuracy_cfg(acc), _accuracy_state(reports, "it0-c0"), cands)
    assert got == {"metric": acc, "returned": "it0-c0", "train": 0.9, "test": 0.7,
                   "children_train_max": 0.75, "children_test_max": 0.8}
    # measured as a reported metric only, with no returned candidate yet and no child measured on a split
    got = generation_accuracy(_accuracy_cfg("return", (acc,)), _accuracy_state(reports, None),
                              [Candidate("it1-c2", 1, 0, []), Candidate("it1-c9", 1, 1, [])])
    assert got == {"metric": acc, "returned": None, "train": None, "test": None,
                   "children_train_max": None, "children_test_max": None}


def test_generation_accuracy_is_none_when_the_search_does_not_measure_it():
    from bird.components.demos import REWARD_ACCURACY, generation_accuracy

    reports = {"it0-c0": {"metrics": {REWARD_ACCURACY: 0.9}}}
    assert generation_accuracy(_accuracy_cfg("return", ("success",)), _accuracy_state(reports, "it0-c0"), []) is None
    assert generation_accuracy(_accuracy_cfg(REWARD_ACCURACY), _accuracy_state(reports, "it0-c0", None), []) is None


def test_episodes_without_a_validity_mask_keep_every_step_as_float64():
    from bird.components.demos import _episodes

    states = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    eps = _episodes(states, np.array([[1, 0, 1], [-1, -1, -1]]), "random")
    assert eps.states.dtype == np.float64 and eps.states.tolist() == states.reshape(6, 2).tolist()
    assert eps.episode.tolist() == [0, 0, 0, 1, 1, 1] and eps.step.tolist() == [0, 1, 2, 0, 1, 2]
    assert eps.label.tolist() == [1, 0, 1, -1, -1, -1] and eps.source == ["random", "random"]
    masked = _episodes(states, np.ones((2, 3)), "expert", np.array([[True, True, False], [True, False, False]]))
    assert masked.episode.tolist() == [0, 0, 1] and masked.step.tolist() == [0, 1, 0]


def test_each_kind_s_own_train_cap_overrides_max_train(compose_cfg):
    cfg, demos = _load(compose_cfg, "demos.n_expert=3", "demos.n_negative=3", "demos.max_train=4",
                       "demos.max_train_expert=1", "demos.max_train_negative=3")
    assert demos.train.source == ["expert", "random", "random", "random"]
    assert demos.test.source == ["expert", "expert"]


class _RecordingPool:
    def __init__(self):
        self.calls = []

    def run(self, learner, jobs):
        self.calls.append((learner, jobs))
        return ["result-0", "result-1"]


def test_the_ppo_expert_is_asked_for_with_the_task_budget_and_seed_and_trained_by_the_pool(compose_cfg, monkeypatch):
    import bird.components.demos as demos_mod
    import bird.learners.sb3_ppo as sb3_ppo

    cfg = compose_cfg(*BASE, "demos.expert=ppo", "demos.expert_seed=7")
    asked = []

    def fake_ppo_expert(env, steps, seed, run):
        asked.append((env, steps, seed))
        return run("job")

    monkeypatch.setattr(demos_mod, "ppo_expert", fake_ppo_expert)
    pool = _RecordingPool()
    assert demos_mod.expert_source(cfg, pool) == "result-0"
    assert asked == [(cfg.env, cfg.budget.expert_env_steps, 7)] and pool.calls == [("sb3_ppo", ["job"])]
    monkeypatch.setattr(sb3_ppo, "train_ppo", lambda job: f"in-process {job}")
    assert demos_mod.expert_source(cfg, None) == "in-process job"
    assert demos_mod.expert_source(compose_cfg(*BASE, "demos.expert=scripted"), pool) is None


def test_the_demo_set_loads_its_expert_demos_from_the_chosen_expert(compose_cfg, monkeypatch):
    from types import SimpleNamespace

    import bird.components.demos as demos_mod

    source = SimpleNamespace(description="a PPO expert at 1000 steps")
    pool, seen = object(), []
    real_load = demos_mod.load_demos

    def fake_expert_source(cfg, got_pool):
        seen.append(got_pool)
        return source

    def load(env_id, n, seed, kind, expert=None):
        seen.append((kind, expert))
        # the scripted expert's demos stand in for the PPO expert's; episodes that ended early (falls) at 300, 450
        return dataclasses.replace(real_load(env_id, n, seed, kind), length=np.array([300, 450]))

    monkeypatch.setattr(demos_mod, "expert_source", fake_expert_source)
    monkeypatch.setattr(demos_mod, "load_demos", load)
    from bird.envs.registry import make_adapter

    cfg = compose_cfg(*BASE, "demos.test_fraction=0", "demos.positive_states=last_state")
    demos = demos_mod.load_demo_set(cfg, make_adapter(cfg.env).spec, None, pool)
    assert seen == [pool, ("expert", source), ("random", None)]
    assert demos.meta["expert"] == "a PPO expert at 1000 steps"
    train = demos.train  # the padding after each early end is left out; the last real state is the positive
    assert train.episode.tolist() == [0] * 300 + [1] * 450 + [2] * 300 + [3] * 450
    assert train.step[train.label > 0].tolist() == [299, 449] and (train.label[750:] == -1).all()


def test_the_expert_is_picked_by_the_suite_before_the_first_slash_of_the_env_id(monkeypatch):
    from types import SimpleNamespace

    import bird.components.demos as demos_mod

    asked = []
    suite = SimpleNamespace(offers=lambda env: ("offers", env.id))
    monkeypatch.setattr(demos_mod, "get", lambda family, name: asked.append((family, name)) or suite)
    monkeypatch.setattr(demos_mod, "demo_expert", lambda *args: asked.append(args) or "scripted")
    cfg = SimpleNamespace(env=SimpleNamespace(id="mysuite/group/task"), demos=SimpleNamespace(expert="auto"))
    assert demos_mod.expert_source(cfg, None) is None
    assert asked == [("suite", "mysuite"), ("auto", ("offers", "mysuite/group/task"), "mysuite/group/task")]
