"""The demo-set builder on real Meta-World demonstrations: expert states are the positives, random-policy states
the negatives, and a reward that prefers the expert's states gets the higher demo fitness through the feedback
stage. Labels swapped anywhere (builder, fitness) make these fail."""

from __future__ import annotations

import numpy as np
import pytest

from bird.types import Candidate, TrainResult

DEMOS = ["demos.n_expert=2", "demos.n_negative=2", "demos.test_fraction=0.5", "demos.max_train=null"]
# GRACE's state-only contract: closeness of the hand to the goal, which the scripted expert reaches
CLOSER = """
import numpy as np

class Reward:
    def __init__(self, extra_info=None):
        pass

    def reward_fn(self, state):
        return SIGN float(np.linalg.norm(np.asarray(state['hand_pos']) - np.asarray(state['goal_pos'])))
"""


@pytest.fixture(scope="module")
def grace_setup():
    from bird.components.demos import load_demo_set
    from bird.config.load import compose
    from bird.envs.demos import load_demos
    from bird.envs.registry import make_adapter
    from bird.llm.factory import make_generator

    cfg = compose(["budget=smoke", "run.progress=false", "method=grace", "env=metaworld/reach", *DEMOS])
    spec = make_adapter(cfg.env).spec
    demos = load_demo_set(cfg, spec, make_generator(cfg.llm, cfg.budget))  # GRACE's own positive-state rule
    expert = load_demos(cfg.env.id, 2, cfg.demos.seed, "expert").next_obs.reshape(-1, spec.obs_index.dim)
    random = load_demos(cfg.env.id, 2, cfg.demos.seed, "random").next_obs.reshape(-1, spec.obs_index.dim)
    return cfg, spec, demos, expert.astype(np.float64), random.astype(np.float64)


def _rows(states: np.ndarray) -> set[bytes]:
    return {row.tobytes() for row in np.asarray(states, dtype=np.float64)}


def _splits(demos):
    return [s for s in (demos.train, demos.test) if s is not None]


def test_positives_are_expert_states_and_every_random_state_is_negative(grace_setup):
    _, _, demos, expert, random = grace_setup
    expert_rows, random_rows = _rows(expert), _rows(random)
    assert not expert_rows & random_rows  # the two sources are distinguishable row by row
    positives = [s.states[s.label > 0] for s in _splits(demos)]
    negatives = [s.states[s.label < 0] for s in _splits(demos)]
    pos_rows, neg_rows = _rows(np.concatenate(positives)), _rows(np.concatenate(negatives))
    assert pos_rows and pos_rows <= expert_rows
    assert random_rows <= neg_rows  # D- is all negative, in train and test together
    for split in _splits(demos):  # and each split holds both classes
        assert (split.label > 0).any() and (split.label < 0).any()


def test_every_state_row_keeps_its_source_episode(grace_setup):
    _, _, demos, expert, random = grace_setup
    expert_rows, random_rows = _rows(expert), _rows(random)
    for split in _splits(demos):
        for ep, source in enumerate(split.source):
            rows = _rows(split.states[split.episode == ep])
            assert rows, (ep, source)
            assert rows <= (expert_rows if source == "expert" else random_rows), (ep, source)


def _fitness(cfg, spec, demos, sign: str) -> dict[str, float]:
    from bird.stages.feedback import feedback
    from bird.state import Plan, SearchState

    state = SearchState(spec, Plan(1, 1, 10, 10, 1, 1), 0, {})
    state.demos = demos
    cand = Candidate("it1-c0", 1, 0, [], code=CLOSER.replace("SIGN", sign))
    report = feedback(cfg, state, [cand], {cand.id: TrainResult(cand.id, 0, (), 0, 0.0)})[cand.id]
    return {"fitness": report.fitness, **report.stats["metrics"]}


def test_a_reward_preferring_expert_states_gets_the_higher_demo_fitness(grace_setup):
    cfg, spec, demos, _, _ = grace_setup
    good, bad = _fitness(cfg, spec, demos, "-"), _fitness(cfg, spec, demos, "")
    assert good["fitness"] == good["demo_airl"] > bad["fitness"] == bad["demo_airl"]
    assert good["demo_pairwise"] > 0.6 > 0.4 > bad["demo_pairwise"]
    assert good["demo_pairwise"] + bad["demo_pairwise"] == pytest.approx(1.0)  # no ties: negation flips every pair
    assert good["demo_pairwise_test"] > 0.5 > bad["demo_pairwise_test"]
