"""No success line where the suite defines none: every feedback format × every suite, rendered with the score shown
(feedback.show_score), prints a success rate or a solved/not-solved sentence only on a suite whose benchmark defines
success (Meta-World's flag). Gym MuJoCo and Brax define none, so a "success rate" there would be the normalised
benchmark score under another name. The rollouts carry episode scores of 1.0, so a format that derives success from
the score would print it; the positive control restores that behaviour and must be caught."""

import json
import re
from dataclasses import replace

import numpy as np
import pytest

from bird.components.judgement import judge_candidate
from bird.components.trajectories import TrajectoryStore, _episode_view
from bird.envs.registry import make_adapter, suite_defines_success
from bird.learners.rollouts import save_rollouts
from bird.llm.journal import JournalGenerator
from bird.llm.offline import OfflineSynthesiser
from bird.registry import get, names
from bird.state import Plan, SearchState
from bird.types import Candidate, Checkpoint, TrainResult

# a line that states success: a rate with its value, or the solved / did-not-solve sentence (not a template's general
# wording such as Eureka's "global policy metrics such as success rates")
SUCCESS_LINE = re.compile(r"success rate \d|success\w*:\s*[\d\[]|solved the task in|did not solve the task", re.IGNORECASE)
CODE = "def compute_reward(obs, action, next_obs, info):\n    return {'alive': next_obs['torso_height'] * 0 + 1.0}\n"
# a prompt template set that has each format's templates
PROMPT = {"process": "card", "preference": "card", "judge": "regot", "misscored_demos": "grace"}
ENV = {"mujoco": "env=mujoco/hopper", "brax": "env=mujoco/hopper", "metaworld": "env=metaworld/push",
       "gym": "env=gym/pendulum", "babyai": "env=babyai/GoToRedBall"}


@pytest.fixture(scope="module")
def specs(compose_cfg):
    """One real task spec per suite; Brax's is Hopper's spec with the suite renamed (the formats read only the suite
    name and the observation index, and a Brax env takes seconds to build)."""
    out = {s: make_adapter(compose_cfg(ENV[s]).env).spec for s in ("mujoco", "metaworld", "gym", "babyai")}
    out["brax"] = replace(out["mujoco"], suite="brax", env_id="brax/hopper")
    return out


def _rollouts(path, spec) -> str:
    n = 40
    obs = np.zeros((n, spec.obs_index.dim))
    data = {"obs": obs, "actions": np.zeros((n, spec.action_dim)), "next_obs": obs, "episode": np.repeat([0, 1], n // 2),
            "reward": np.linspace(0.0, 1.0, n), "comp/alive": np.ones(n), "score": np.array([1.0, 1.0]),
            "quantity": np.array([5.0, 5.0]), "length": np.array([n // 2, n // 2])}
    save_rollouts(path, data)
    return str(path)


def _render(compose_cfg, specs, tmp_path, fmt: str, suite: str) -> tuple[str, dict]:
    cfg = compose_cfg(ENV[suite], f"feedback.format={fmt}", "feedback.show_score=true", "train.collect_episodes=2",
                      f"generate.prompt={PROMPT.get(fmt, 'eureka')}")
    spec = specs[suite]
    state = SearchState(spec, Plan(1, 1, 10, 10, 1, 1), 0, {})
    state.judge = JournalGenerator(OfflineSynthesiser("offline"), None)
    cand = Candidate("it1-c0", 1, 0, [], code=CODE)
    curve = tuple(Checkpoint(100 * (k + 1), 1.0, 5.0, 2.0, 3.0, 20.0, {"alive": 1.0}) for k in range(3))
    res = TrainResult(cand.id, 0, curve, 300, 1.0, rollouts_path=_rollouts(tmp_path / f"{fmt}-{suite}.npz", spec))
    if fmt == "preference":  # the TPE verdict's two views, built as the screen builds them
        store = TrajectoryStore()
        store.add({k: np.load(res.rollouts_path)[k] for k in ("obs", "actions", "next_obs", "episode")},
                  np.array([suite_defines_success(suite), False]), "it0-c0")
        views = {k: _episode_view(cfg, state, store, np.linspace(0, 1, 40), ep)
                 for k, ep in (("worst_success", 0), ("best_failure", 1))}
        state.screens[cand.id] = {"tpe": {"rate": 0.5, "n_success": 1, "n_below": 1, "threshold": 0.8, **views}}
    if fmt == "subtask_judge":
        judge_candidate(cfg, state, cand, res)
    return get("feedback_format", fmt)(cfg, state, cand, res)


@pytest.mark.parametrize("suite", ["mujoco", "brax", "metaworld", "gym"])
@pytest.mark.parametrize("fmt", names("feedback_format"))
def test_a_success_line_appears_only_where_the_suite_defines_success(compose_cfg, specs, tmp_path, fmt, suite):
    text, stats = _render(compose_cfg, specs, tmp_path, fmt, suite)
    if not suite_defines_success(suite):
        assert not SUCCESS_LINE.search(text), f"{fmt} on {suite} prints a success line:\n{text}"
        assert '"solved"' not in json.dumps(stats, default=str), f"{fmt} on {suite} records a solved flag"
    elif fmt in ("process", "preference"):  # CARD's formats show success where there is one (Meta-World)
        assert SUCCESS_LINE.search(text), f"{fmt} on {suite} shows no success:\n{text}"


def test_every_suite_is_covered():
    assert set(names("suite")) == set(ENV)


def test_the_success_line_check_catches_the_old_behaviour(compose_cfg, specs, tmp_path, monkeypatch):
    """Positive control: with success assumed on every suite (the old process format), MuJoCo gets a success line."""
    from bird.components import formats, trajectories

    for module in (formats, trajectories):
        monkeypatch.setattr(module, "suite_defines_success", lambda suite: True)
    for fmt in ("process", "preference"):
        assert SUCCESS_LINE.search(_render(compose_cfg, specs, tmp_path, fmt, "mujoco")[0])
