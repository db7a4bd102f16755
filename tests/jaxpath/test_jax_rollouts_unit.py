"""The JAX learner's greedy episodes (bird/learners/jax_rollouts.py), run op by op in this process on a point env
(point_env.py) with a linear stand-in policy: what rollouts.npz holds (rows only until each episode's done,
episode-major, per-slot seeds), the own-reward return at a checkpoint, and artefacts called on any number of rows.
Expected values come from the same dynamics in numpy (the trainings themselves: test_jax_learner.py)."""

from __future__ import annotations

from types import SimpleNamespace

import flax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from point_env import PointEnv, episode_np, start

from bird.envs.brax.episodes import episode_env
from bird.learners import jax_rollouts
from bird.learners.jax_rollouts import columns, eval_own_returns, record_rollouts_jax
from bird.learners.job import ROLLOUT_SEED_BASE

HORIZON, REPEAT = 7, 2  # 4 decisions: the last one is cut by the horizon (steps 8 >= 7)


@pytest.fixture(autouse=True)
def eager():
    with jax.disable_jit():
        yield


@flax.struct.dataclass
class Params:
    policy: jax.Array  # (K,) each slot's gain


@flax.struct.dataclass
class TS:
    normalizer: jax.Array
    params: Params


class Program:
    """What the recorder reads of a PPOProgram: env, kind, horizon, make_policy."""

    def __init__(self, kind: str = "displacement") -> None:
        self.env, self.kind, self.horizon = episode_env(PointEnv(), HORIZON, REPEAT), kind, HORIZON

    def make_policy(self, params, deterministic: bool = False):
        normalizer, gain = params
        assert deterministic

        def policy(obs, key):
            return (gain + normalizer - obs[..., :1] / 4), {}
        return policy


def act(gain: float, shift: float = 0.0):
    return lambda obs: gain + shift - obs[0] / 4


def state(gains, shifts=None) -> TS:
    gains = jnp.asarray(gains, dtype=jnp.float32)
    return TS(jnp.zeros_like(gains) if shifts is None else jnp.asarray(shifts, dtype=jnp.float32), Params(gains))


def export(rows: int):
    """A real exported artefact for `rows` rows: columns [2 x' + a, v', a]."""
    def f(obs, action, nxt):
        return jnp.stack([2 * nxt[:, 0] + action[:, 0], nxt[:, 1], action[:, 0]], axis=1)

    return jax.export.export(jax.jit(f))(jax.ShapeDtypeStruct((rows, 3), jnp.float32),
                                         jax.ShapeDtypeStruct((rows, 1), jnp.float32),
                                         jax.ShapeDtypeStruct((rows, 3), jnp.float32))


def own_reward(row: dict) -> float:
    return 2 * row["next_obs"][0] + row["action"]


def truncated(rows: list[dict]) -> list[dict]:
    """The rows of an episode up to and including its done step."""
    out = []
    for row in rows:
        out.append(row)
        if row["done"]:
            break
    return out


# -- columns -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 3, 7])
def test_an_artefact_for_3_rows_labels_any_number_of_rows_in_order(n):
    rng = np.random.default_rng(n)
    obs, action, nxt = rng.normal(size=(n, 3)), rng.normal(size=(n, 1)), rng.normal(size=(n, 3))
    out = columns(export(3), 3, obs, action, nxt)
    want = np.stack([2 * nxt[:, 0] + action[:, 0], nxt[:, 1], action[:, 0]], axis=1)
    assert out.shape == (n, 3) and out.dtype == np.float64
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)


def test_no_rows_label_as_an_empty_array():
    out = columns(export(2), 2, np.zeros((0, 3)), np.zeros((0, 1)), np.zeros((0, 3)))
    assert out.shape == (0, 3)


def test_padding_rows_do_not_reach_the_kept_values():
    """The padding is zeros: an artefact whose values depend on other rows would show it; this one is per row."""
    calls = []

    class Spy:
        def call(self, *chunk):
            calls.append([np.asarray(c).copy() for c in chunk])
            return chunk[0][:, :1] * 10.0

    out = columns(Spy(), 4, np.arange(15.0).reshape(5, 3), np.ones((5, 1)), np.ones((5, 3)))
    np.testing.assert_allclose(out[:, 0], [0, 30, 60, 90, 120])
    assert [c[0].shape for c in calls] == [(4, 3), (4, 3)]
    assert all(c.dtype == np.float32 for chunk in calls for c in chunk)
    np.testing.assert_array_equal(calls[1][0][1:], 0.0)  # the second chunk: one real row, three of zero padding
    np.testing.assert_array_equal(calls[1][1][1:], 0.0)


# -- recorded episodes -------------------------------------------------------------------------------------------
def _jobs():
    program = SimpleNamespace(rows=3, components=("v", "a"))
    return [SimpleNamespace(collect_episodes=2, seed=3, program=program),
            SimpleNamespace(collect_episodes=2, seed=5, program=None)]


def test_rollouts_hold_each_live_slots_episodes_until_done_episode_major():
    jobs = _jobs()
    slot_jobs, gains = [1, 0, 1], [0.3, 0.5, -0.5]  # slot 2 repeats job 1 (padding) with other weights
    shifts = [0.0, 0.1, 0.0]
    exported = [None, export(3), None]
    out = record_rollouts_jax(Program(), state(gains, shifts), slot_jobs, 2, jobs, exported, random_q=0.5, scale=4.0)
    assert sorted(out) == [0, 1]
    for slot, i in enumerate(slot_jobs[:2]):
        data, eps = out[i], []
        for k in range(2):
            x0 = start(ROLLOUT_SEED_BASE + 1000 * jobs[i].seed + k)
            eps.append(truncated(episode_np(x0, act(gains[slot], shifts[slot]), HORIZON, REPEAT, 4)))
        rows = [r for ep in eps for r in ep]
        np.testing.assert_array_equal(data["episode"], [k for k, ep in enumerate(eps) for _ in ep])
        np.testing.assert_array_equal(data["length"], [len(ep) for ep in eps])
        np.testing.assert_allclose(data["obs"], [r["obs"] for r in rows], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(data["next_obs"], [r["next_obs"] for r in rows], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(data["actions"][:, 0], [r["action"] for r in rows], rtol=1e-5, atol=1e-6)
        quantity = [ep[-1]["next_obs"][0] - ep[0]["obs"][0] for ep in eps]  # displacement: last x - first x
        np.testing.assert_allclose(data["quantity"], quantity, rtol=1e-5)
        np.testing.assert_allclose(data["score"], (np.asarray(quantity) - 0.5) / 4.0, rtol=1e-5)
        assert all(v.dtype == np.float64 for k, v in data.items() if k not in ("episode", "length"))
        if exported[slot] is None:
            np.testing.assert_allclose(data["reward"], [r["reward"] for r in rows], rtol=1e-5)
            assert not any(k.startswith("comp/") for k in data)
        else:
            np.testing.assert_allclose(data["reward"], [own_reward(r) for r in rows], rtol=1e-5)
            np.testing.assert_allclose(data["comp/v"], [r["next_obs"][1] for r in rows], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(data["comp/a"], [r["action"] for r in rows], rtol=1e-5, atol=1e-6)


def test_an_episode_cut_by_the_horizon_and_one_that_terminates_differ_in_length():
    """Gain 0.5 terminates (x > 2) at its second decision from every start; gain -0.5 never does. Survival counts the
    underlying steps until done (2 per decision; the horizon's 7 is passed at 8)."""
    jobs = _jobs()
    out = record_rollouts_jax(Program("survival"), state([0.5, -0.5]), [0, 1], 2, jobs, [None, None], 0.0, 1.0)
    fast, slow = out[0], out[1]
    assert fast["length"].tolist() == [2, 2] and slow["length"].tolist() == [4, 4]
    assert len(fast["obs"]) == 4 and len(slow["obs"]) == 8
    assert fast["quantity"].tolist() == [4.0, 4.0] and slow["quantity"].tolist() == [8.0, 8.0]


# -- own return at a checkpoint ----------------------------------------------------------------------------------
def test_the_own_return_sums_each_episode_until_done_and_averages_the_episodes():
    gains = [0.5, 0.3]
    words = np.array([[4, 12], [9, 2]])  # (K, E) reset keys' last words
    keys = jnp.stack([jnp.zeros((2, 2), jnp.uint32).at[:, 1].set(w) for w in words])
    own = eval_own_returns(Program(), state(gains), keys, [export(3), None], rows=3)
    want = []
    for slot in range(2):
        totals = []
        for e in range(2):
            ep = truncated(episode_np(start(words[slot, e]), act(gains[slot]), HORIZON, REPEAT, 4))
            totals.append(sum(own_reward(r) if slot == 0 else r["reward"] for r in ep))
        want.append(np.mean(totals))
    np.testing.assert_allclose(own, want, rtol=1e-5)


def test_recorder_is_built_once_per_program():
    program = Program()
    assert jax_rollouts._recorder(program) is jax_rollouts._recorder(program)


def test_a_group_of_one_job_records_its_slots():
    jobs = _jobs()[:1]
    out = record_rollouts_jax(Program(), state([0.5, 0.5]), [0, 0], 1, jobs, [None, None], 0.0, 1.0)
    assert list(out) == [0] and out[0]["length"].tolist() == [2, 2]


def test_the_own_return_of_the_reference_reward_is_summed_in_float64(monkeypatch):
    """float32 would lose the small rewards next to 2**24 (2**24 + 1 is not a float32)."""
    ref = np.array([[[2.0 ** 24], [1.0], [1.0]]], dtype=np.float32)  # (K, T, E)
    rec = {"ref": ref, "active": np.ones_like(ref)}
    monkeypatch.setattr(jax_rollouts, "_recorder", lambda program: lambda state, keys: rec)
    own = eval_own_returns(Program(), state([0.0]), None, [None], rows=3)
    assert own.tolist() == [2.0 ** 24 + 2]
