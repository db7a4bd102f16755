"""CARD's trajectory store and TPE screen through the real loop body, on a store holding both successes and
failures: real Meta-World rollouts (scripted expert = success, uniform random = failure) are labelled by
add_rollouts, then one iteration screens a reward that misranks them (training skipped, preference feedback) and
trains one that ranks them right."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bird.llm.base import Generator, Request, Response

OVERRIDES = ["budget=smoke", "run.progress=false", "method=card", "env=metaworld/reach", "env.horizon=100",
             "generate.n_candidates=2", "budget.max_candidates=2", "budget.max_iterations=3", "budget.env_steps=1024",
             "train.collect_episodes=2", "budget.eval_episodes=1"]
PROGRAM = """import numpy as np

def compute_reward(obs, action, next_obs, info):
    distance = np.linalg.norm(next_obs['hand_pos'] - next_obs['goal_pos'], axis=-1)
    return SIGN distance, {'distance': distance}
"""
RIGHT, WRONG = PROGRAM.replace("SIGN", "-"), PROGRAM.replace("SIGN", "")


class TwoPrograms(Generator):
    """Test double at the LLM boundary: sample 0 answers the reward that ranks the store right, sample 1 its negation."""

    provider = "scripted-test"

    def complete(self, request: Request) -> Response:
        code = RIGHT if request.sample_index == 0 else WRONG
        return Response(f"```python\n{code}```", self.model)


@pytest.fixture(scope="module")
def rollouts(tmp_path_factory):
    """Real rollouts saved as a trained candidate's rollouts.npz: 2 expert episodes, then 2 random ones."""
    from bird.config.load import compose
    from bird.envs.registry import make_adapter
    from bird.learners.rollouts import collect_rollouts, save_rollouts

    cfg = compose(OVERRIDES)
    adapter = make_adapter(cfg.env)
    expert = adapter.expert_policy()
    rng = np.random.default_rng(0)
    root = tmp_path_factory.mktemp("card_rollouts")
    paths = {}
    for name, act in (("expert", lambda obs: np.stack([expert(o) for o in obs])),
                      ("random", lambda obs: rng.uniform(-1.0, 1.0, (len(obs), adapter.spec.action_dim)))):
        data = collect_rollouts(adapter, act, 2, seed=0)
        paths[name] = root / f"{name}.npz"
        save_rollouts(paths[name], data)
    return cfg, adapter, paths


def _state(cfg, adapter, paths):
    from bird.components.trajectories import add_rollouts
    from bird.loop import make_plan
    from bird.reward.checks import random_transitions
    from bird.state import SearchState

    state = SearchState(adapter.spec, make_plan(cfg), 0, random_transitions(adapter, cfg.verify.smoke_steps, 0))
    add_rollouts(state, "expert-run", str(paths["expert"]), cfg.verify.tpe_success_score)
    add_rollouts(state, "random-run", str(paths["random"]), cfg.verify.tpe_success_score)
    return state


def test_stored_rollouts_are_labelled_by_their_episode_score(rollouts):
    from bird.learners.rollouts import load_rollouts

    cfg, adapter, paths = rollouts
    assert cfg.verify.tpe_success_score == 1.0
    assert load_rollouts(paths["expert"])["score"].tolist() == [1.0, 1.0]  # a score exactly at the bar is a success
    assert load_rollouts(paths["random"])["score"].tolist() == [0.0, 0.0]
    store = _state(cfg, adapter, paths).trajectories
    assert store.success == [True, True, False, False]
    assert store.source == ["expert-run", "expert-run", "random-run", "random-run"]
    assert store.episode.tolist() == np.repeat([0, 1, 2, 3], 100).tolist()


@pytest.mark.slow
def test_a_misranking_reward_is_screened_and_not_trained_while_a_ranking_one_trains(rollouts, tmp_path):
    from bird.executors.local import TrainPool
    from bird.loop import _iteration
    from bird.progress import ProgressDisplay
    from bird.rundir import RunDir

    cfg, adapter, paths = rollouts
    state = _state(cfg, adapter, paths)
    state.iteration = 1
    run = RunDir(tmp_path)
    pool = TrainPool(1)
    try:
        _iteration(cfg, state, TwoPrograms("two"), pool, run, ProgressDisplay(False))
    finally:
        pool.close()
    verdicts = {v["id"]: v for v in map(json.loads, (tmp_path / "screens.jsonl").read_text().splitlines())}
    right, wrong = verdicts["it1-c0"], verdicts["it1-c1"]
    assert not right["vacuous"] and right["store_episodes"] == 4 and right["n_success"] == 2
    assert right["pass"] and right["rate"] == 1.0 and right["training"] == "attempted"
    assert not wrong["pass"] and wrong["rate"] == 0.0 and wrong["n_below"] == 2 and wrong["training"] == "skipped"
    assert set(state.results) == {"it1-c0"}  # the screened reward trained no policy
    assert state.candidates["it1-c1"].screened and state.candidates["it1-c1"].failure.kind == "screened"
    assert (tmp_path / "candidates" / "it1-c0" / "curve.csv").exists()
    assert not (tmp_path / "candidates" / "it1-c1" / "curve.csv").exists()
    assert "preference" in state.reports["it1-c1"].stats  # CARD's preference feedback after a TPE fail
    assert len(state.trajectories) == 6 and state.trajectories.source[-2:] == ["it1-c0", "it1-c0"]
