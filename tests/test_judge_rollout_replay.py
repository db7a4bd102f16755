"""A VLM judge is shown the rollouts it judges: each collected rollout (real episodes of MuJoCo's inverted pendulum,
each from its own reset seed) is replayed for its keyframes from that rollout's own reset, so the states the replay
passes through are the states the rollout recorded. Both judges that replay rollouts: RDA's judged fitness
(judge_score) and RE-GoT's judge feedback."""

from __future__ import annotations

import json

import numpy as np
import pytest

from bird.components import judge, judgement
from bird.envs.registry import make_adapter
from bird.learners.rollouts import collect_rollouts, load_rollouts, save_rollouts
from bird.llm.base import Generator, Request, Response
from bird.llm.journal import JournalGenerator
from bird.registry import get
from bird.state import Plan, SearchState
from bird.types import Candidate, TrainResult

SEED = 3  # the search's seed: its rollouts' reset seeds depend on it
CODE = "def compute_reward(obs, action, next_obs, info):\n    return {'upright': -next_obs['hinge_angle'] ** 2}\n"


class Always(Generator):
    """Test double at the LLM boundary: every judge call gets the same valid answer."""

    provider = "always-test"

    def __init__(self) -> None:
        super().__init__("always", 1)

    def complete(self, request: Request) -> Response:
        return Response(json.dumps({"subtasks": [{"name": "task", "behaviour": "b", "rationale": "r", "score": 1}]}),
                        self.model)


def _pushing(obs: np.ndarray) -> np.ndarray:
    """A policy that loses the pole in a few steps (short episodes), pushed by what it observes."""
    return np.clip(0.2 + obs[:, 1:2], -3.0, 3.0)


def _judge_scores(cfg, state, cand, res) -> int:  # noqa: ANN001 - RDA's judged fitness (judge.rollouts of them)
    out = judgement.judge_candidate(cfg, state, cand, res)
    return sum(c["judge_mode"] == "vlm" for c in out["calls"] if c["error"] is None)


def _judge_feedback(cfg, state, cand, res) -> int:  # noqa: ANN001 - RE-GoT's judge (every collected rollout)
    _, out = get("feedback_format", "judge")(cfg, state, cand, res)
    return out["n_rollouts"] if out["judge"].startswith("vlm:") and out["error"] is None else 0


@pytest.mark.parametrize("method, judged", [("rda", _judge_scores), ("regot", _judge_feedback)])
def test_a_vlm_judge_replays_each_rollout_from_its_own_reset(compose_cfg, tmp_path, monkeypatch, method, judged):
    from bird.envs.frames import RenderingUnavailable, gl_backend

    try:
        gl_backend()
    except RenderingUnavailable as exc:
        pytest.skip(f"no offscreen GL here ({exc})")
    cfg = compose_cfg(f"method={method}", "env=mujoco/inverted_pendulum", "judge.mode=vlm", "judge.rollouts=2",
                      "judge.repeats=1", "feedback.judge_keyframes=3",
                      "generate.env_representation=full_source")  # RE-GoT's abstraction is Meta-World's only
    adapter = make_adapter(cfg.env)
    path = tmp_path / "rollouts.npz"
    save_rollouts(path, collect_rollouts(adapter, _pushing, 2, SEED))
    recorded = load_rollouts(path)
    first, second = (recorded["obs"][recorded["episode"] == ep][0] for ep in range(2))
    assert np.abs(first - second).max() > 1e-3  # the two rollouts' resets differ

    replayed: list[list[np.ndarray]] = []  # the observations each replay passed through, in order

    def watching(real):  # noqa: ANN001, ANN202
        def render_episode(adapter, seed=0, policy=None, **kwargs):  # noqa: ANN001, ANN202 - its signature
            seen: list[np.ndarray] = []
            replayed.append(seen)
            return real(adapter, seed, lambda obs: seen.append(np.array(obs)) or policy(obs), **kwargs)
        return render_episode

    monkeypatch.setattr(judge, "render_episode", watching(judge.render_episode))  # both judges replay through judge
    state = SearchState(adapter.spec, Plan(1, 2, 10, 10, 1, 1), SEED, {})
    state.judge = JournalGenerator(Always(), None)
    cand = Candidate("it1-c0", 1, 0, [], code=CODE)
    assert judged(cfg, state, cand, TrainResult(cand.id, SEED, (), 0, 0.0, rollouts_path=str(path))) == 2
    assert len(replayed) == 2
    for ep, seen in enumerate(replayed):
        want = recorded["obs"][recorded["episode"] == ep]
        n = min(len(seen), len(want))
        # stored as float32 (save_rollouts): equal to that precision, far below the resets' differences
        np.testing.assert_allclose(np.stack(seen[:n]), want[:n], atol=1e-5, err_msg=f"rollout {ep}")
        assert len(seen) == len(want), f"rollout {ep}"
