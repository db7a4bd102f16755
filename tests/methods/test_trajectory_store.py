"""The trajectory store's bookkeeping and the TPE screen's verdict on a hand-made store with episodes of different
lengths, where every per-step score is worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from bird.components.trajectories import TrajectoryStore, tpe_rule


def _rollouts(xs: list[list[float]], scores: list[float]) -> dict[str, np.ndarray]:
    """Episodes whose hand x position (obs column 0) takes the given values, one list per episode."""
    n = sum(map(len, xs))
    obs = np.zeros((n, 39), dtype=np.float32)
    obs[:, 0] = np.concatenate(xs)
    return {"obs": obs, "actions": np.ones((n, 4), dtype=np.float32), "next_obs": obs.copy(),
            "episode": np.repeat(np.arange(len(xs)), list(map(len, xs))), "score": np.asarray(scores),
            "length": np.asarray(list(map(len, xs)))}


def test_add_appends_episodes_after_the_stored_ones():
    store = TrajectoryStore()
    assert len(store) == 0
    first = _rollouts([[1.0, 2.0], [3.0]], [1.0, 0.0])
    store.add(first, np.array([True, False]), "it1-c0")
    assert store.episode.dtype.kind == "i"
    store.add(_rollouts([[4.0], [5.0, 6.0, 7.0]], [0.0, 1.0]), np.array([0, 1]), "it2-c0")
    assert len(store) == 4 and store.success == [True, False, False, True]
    assert store.source == ["it1-c0", "it1-c0", "it2-c0", "it2-c0"]
    assert store.episode.tolist() == [0, 0, 1, 2, 3, 3, 3] and store.episode.dtype.kind == "i"
    assert store.obs[:, 0].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0] and store.obs.dtype == np.float64
    assert store.actions.shape == (7, 4) and store.next_obs.dtype == np.float64
    assert store.dones.tolist() == [False, True, True, True, False, False, True]
    assert first["obs"].dtype == np.float32  # the caller's arrays are not changed


def test_add_rollouts_labels_each_episode_by_its_score(tmp_path):
    from bird.components.trajectories import add_rollouts
    from bird.learners.rollouts import save_rollouts
    from bird.state import Plan, SearchState

    path = tmp_path / "rollouts.npz"
    save_rollouts(path, _rollouts([[1.0], [2.0], [3.0]], [0.99, 1.0, 1.5]))
    from types import SimpleNamespace

    # a suite whose score is a success flag (Meta-World); elsewhere no episode is a success (BIRD Table 8 note a)
    state = SearchState(SimpleNamespace(suite="metaworld"), Plan(1, 1, 1, 1, 1, 1), 0, {})  # type: ignore[arg-type]
    add_rollouts(state, "it1-c0", str(path), 1.0)
    add_rollouts(state, "it1-c1", str(path), 1.2)
    assert state.trajectories.success == [False, True, True, False, False, True]
    assert state.trajectories.source == ["it1-c0"] * 3 + ["it1-c1"] * 3


@pytest.fixture(scope="module")
def card(compose_cfg):
    from bird.envs.registry import make_adapter
    from bird.state import Plan, SearchState

    cfg = compose_cfg("method=card", "env=metaworld/reach", "feedback.trajectory_stride=2")
    state = SearchState(make_adapter(cfg.env).spec, Plan(1, 3, 10, 10, 1, 1), 0, {})
    store = TrajectoryStore()
    # per-step means of x: 1.5 (success), 3.0 (failure), 4.0 (success), 0.5 (failure)
    store.add(_rollouts([[1.0, 2.0], [3.123, 3.0, 2.877, 3.0], [4.0], [0.0, 1.0]], [1, 0, 1, 0]),
              np.array([True, False, True, False]), "it1-c0")
    state.trajectories = store
    return cfg, state


def _program(body: str) -> str:
    return f"import numpy as np\n\ndef compute_reward(obs, action, next_obs, info):\n{body}"


def _screen(cfg, state, code):
    from bird.registry import get
    from bird.types import Candidate

    return get("screen", "tpe")(Candidate("it2-c0", 2, 0, [], code=code), cfg, state)


def test_the_screen_compares_per_step_means_with_the_best_failure(card):
    cfg, state = card
    failure, verdict = _screen(cfg, state, _program("    r = next_obs['hand_pos'][:, 0]\n    return r, {'x': r}\n"))
    # successes 1.5 and 4.0 against the best failure 3.0: one of two above, below the 0.8 threshold
    assert verdict["rate"] == 0.5 and verdict["n_below"] == 1 and not verdict["pass"] and not verdict["vacuous"]
    assert (verdict["n_success"], verdict["n_failure"], verdict["store_episodes"]) == (2, 2, 4)
    assert failure is not None and failure.kind == "screened"
    assert failure.reason == ("TPE: 0.50 of successful trajectories outscore the best failed one (threshold 0.8)")
    worst, best_fail = verdict["worst_success"], verdict["best_failure"]
    assert (worst["return"], worst["length"], worst["per_step"], worst["solved"]) == (3.0, 2, 1.5, True)
    assert best_fail["return"] == pytest.approx(12.0) and best_fail["per_step"] == pytest.approx(3.0)
    assert (best_fail["length"], best_fail["solved"]) == (4, False)
    # one row every 2 steps plus the last: steps 1, 3 and 4 of the 4-step failure, rewards to 2 decimals
    assert [r["step"] for r in best_fail["rows"]] == [1, 3, 4]
    assert [r["reward"] for r in best_fail["rows"]] == [3.12, 2.88, 3.0]
    assert best_fail["rows"][0]["state"]["hand_pos"] == [3.123, 0.0, 0.0]


def test_the_screen_passes_a_reward_that_ranks_every_success_first(card):
    cfg, state = card
    body = "    r = np.where(next_obs['hand_pos'][:, 0] == 3.0, -10.0, next_obs['hand_pos'][:, 0])\n    return r, {}\n"
    failure, verdict = _screen(cfg, state, _program(body))
    assert failure is None and verdict["pass"] and verdict["rate"] == 1.0 and verdict["n_below"] == 0


def test_a_program_that_fails_on_the_store_is_recorded_not_screened(card):
    cfg, state = card
    failure, verdict = _screen(cfg, state, _program("    return next_obs['nope'], {}\n"))
    assert failure is not None and failure.kind == "runtime_error"
    assert verdict == {"pass": False, "error": failure.reason}


def test_an_empty_store_passes_vacuously(card):
    cfg, state = card
    from dataclasses import replace

    failure, verdict = _screen(cfg, replace(state, trajectories=None), _program("    return next_obs['hand_pos'][:, 0], {}\n"))
    assert failure is None and verdict == {"pass": True, "vacuous": True, "rate": 1.0, "n_success": 0,
                                           "n_failure": 0, "n_below": 0, "threshold": 0.8}
    assert tpe_rule(np.array([1.0, 2.0]), np.zeros(0), 0.5) == {
        "pass": True, "vacuous": True, "rate": 1.0, "n_success": 2, "n_failure": 0, "n_below": 0, "threshold": 0.5}


def test_add_rollouts_labels_no_episode_a_success_on_a_suite_without_a_success_flag(tmp_path):
    from types import SimpleNamespace

    from bird.components.trajectories import add_rollouts
    from bird.learners.rollouts import save_rollouts
    from bird.state import Plan, SearchState

    path = tmp_path / "rollouts.npz"
    save_rollouts(path, _rollouts([[1.0], [2.0], [3.0]], [0.5, 2.0, 9.0]))
    # MuJoCo's score is a return, not a success flag: even scores above success_score are not successes
    state = SearchState(SimpleNamespace(suite="mujoco"), Plan(1, 1, 1, 1, 1, 1), 0, {})  # type: ignore[arg-type]
    add_rollouts(state, "it1-c0", str(path), 1.0)
    assert state.trajectories.success == [False, False, False] and state.trajectories.source == ["it1-c0"] * 3


def test_an_episode_view_says_solved_only_on_a_suite_with_a_success_flag(card):
    from dataclasses import replace

    from bird.components.trajectories import _episode_view

    cfg, state = card
    store = state.trajectories
    reward = store.obs[:, 0]
    flagged = _episode_view(cfg, state, store, reward, 0)
    assert flagged["solved"] is True and flagged["return"] == 3.0
    unflagged = _episode_view(cfg, replace(state, spec=replace(state.spec, suite="mujoco")), store, reward, 0)
    assert "solved" not in unflagged and unflagged["return"] == 3.0
