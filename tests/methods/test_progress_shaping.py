"""PRM4RL pieces: the potential-shaping identity, terminal vs truncated steps, Ψ/Φ validation, the progress screen and
the subtask prior on the observation."""

import gymnasium as gym
import numpy as np
import pytest

from bird.registry import get
from bird.reward.sandbox import RewardProgramError, SandboxedReward
from bird.reward.shaping import Transitions, potential_shaping
from bird.types import FailureKind

GOOD = '''
import numpy as np
plan_list = ["Move to object", "Move object to goal"]

def determine_subtask(obs):
    return 0 if obs["x"] < 0.5 else 1

def progress(obs):
    return float(obs["x"])
'''


def _q_values(p: np.ndarray, r: np.ndarray, gamma: float, iters: int = 2000) -> np.ndarray:
    q = np.zeros_like(r)
    for _ in range(iters):
        q = r + gamma * p @ q.max(axis=1)
    return q


def test_potential_shaping_keeps_the_optimal_policy_on_a_tabular_mdp():
    rng = np.random.default_rng(0)
    n_s, n_a, gamma = 5, 3, 0.9
    p = rng.dirichlet(np.ones(n_s), size=(n_s, n_a))  # P[s, a, s']
    r = rng.normal(size=(n_s, n_a))
    phi = rng.normal(scale=3.0, size=n_s)
    shaped = r + gamma * p @ phi - phi[:, None]  # E_{s'}[γΦ(s′)] − Φ(s)
    q, q_shaped = _q_values(p, r, gamma), _q_values(p, shaped, gamma)
    assert (q.argmax(axis=1) == q_shaped.argmax(axis=1)).all()
    np.testing.assert_allclose(q_shaped, q - phi[:, None], atol=1e-8)  # Ng et al.: Q′ = Q − Φ


def test_shaped_episode_return_telescopes():
    gamma, phi = 0.95, np.array([0.1, 0.7, 0.3, 0.9, 0.4])
    tr = Transitions(np.zeros(4), np.zeros(4, bool), np.zeros(4, bool), gamma, 1.0)
    r, _ = potential_shaping(phi[:-1], phi[1:], tr)
    ret = float((gamma ** np.arange(4) * r).sum())
    assert ret == pytest.approx(gamma**4 * phi[-1] - phi[0])  # truncated: Φ(s_T) kept
    tr_end = Transitions(np.zeros(4), np.array([0, 0, 0, 1], bool), np.zeros(4, bool), gamma, 1.0)
    r_end, _ = potential_shaping(phi[:-1], phi[1:], tr_end)
    assert float((gamma ** np.arange(4) * r_end).sum()) == pytest.approx(-phi[0])  # terminal: Φ(s_T) = 0


def test_reward_forms_add_the_harness_success_bonus_and_zero_phi_only_at_terminals():
    comps = {"potential_prev": np.array([0.2, 0.5]), "potential": np.array([0.5, 0.8]), "subtask": np.array([0.0, 1.0])}
    tr = Transitions(np.array([3.0, 4.0]), np.array([False, True]), np.array([False, True]), 0.5, 10.0)
    r, parts = get("reward_form", "potential_shaping")(comps["potential"], comps, tr)
    np.testing.assert_allclose(r, [0.5 * 0.5 - 0.2, 0.0 - 0.5 + 10.0])
    assert set(parts) >= {"shaping", "success_bonus"}
    np.testing.assert_allclose(get("reward_form", "raw_progress")(comps["potential"], comps, tr)[0], [0.5, 0.8])
    np.testing.assert_allclose(get("reward_form", "reference")(comps["potential"], comps, tr)[0], [3.0, 4.0])


class _Stop(gym.Env):
    """Terminates when the action is positive; a TimeLimit truncates at 3 steps."""

    observation_space = gym.spaces.Box(-1, 1, (1,))
    action_space = gym.spaces.Box(-1, 1, (1,))

    def reset(self, *, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 0.0, bool(action[0] > 0), False, {"success": float(action[0] > 0)}


def test_recorder_tells_true_terminals_from_time_limit_truncation():
    from stable_baselines3.common.vec_env import DummyVecEnv

    from bird.learners.relabel import TransitionRecorder

    rec = TransitionRecorder(DummyVecEnv([lambda: gym.wrappers.TimeLimit(_Stop(), 3)]))
    rec.reset()
    for a in (-1, -1, -1, 1):
        rec.step(np.array([[a]], np.float32))
    data = rec.take()
    assert data["dones"][:, 0].tolist() == [False, False, True, True]
    assert data["terminals"][:, 0].tolist() == [False, False, False, True]
    assert data["success"][:, 0].tolist() == [False, False, False, True]


@pytest.mark.parametrize("psi,phi,kind", [
    ("return 2", "return 0.5", FailureKind.BAD_OUTPUT),  # Ψ outside [0, K)
    ("return 1.0", "return 0.5", FailureKind.BAD_OUTPUT),  # Ψ not an int
    ("return 0", "return float('nan')", FailureKind.NON_FINITE),
])
def test_progress_program_rejects_bad_psi_and_phi(psi, phi, kind):
    from bird.envs.base import ObsField, ObsIndex

    code = f"plan_list = ['a', 'b']\ndef determine_subtask(obs):\n    {psi}\ndef progress(obs):\n    {phi}\n"
    index = ObsIndex((ObsField("x", 0, 1, "other"),), 1)
    with pytest.raises(RewardProgramError) as err, SandboxedReward(code, index, contract="progress_program") as prog:
        prog(np.zeros((3, 1)), np.zeros((3, 1)), np.zeros((3, 1)))
    assert err.value.failure.kind == kind


def test_progress_program_without_plan_list_fails_the_static_check():
    from bird.reward.static import check_source

    failure = check_source(GOOD.replace("plan_list", "plans"), "progress", contract="progress_program")
    assert failure is not None and failure.kind == FailureKind.BAD_SIGNATURE and "plan_list" in failure.reason


def test_expert_progress_counts_drops_and_the_last_subtask():
    from bird.components.progress_screen import expert_progress

    phi, psi = np.array([0.0, 0.2, 0.1, 0.5, 1.0]), np.array([0, 0, 0, 1, 1])
    out = expert_progress(phi, psi, 2, np.zeros(5, int))
    assert out["psi_reaches_last"] and out["phi_rises"] and out["drop_fraction"] == pytest.approx(0.1 / 1.2)
    assert not expert_progress(phi, psi, 3, np.zeros(5, int))["psi_reaches_last"]


@pytest.fixture(scope="module")
def drawer_state(compose_cfg):
    from bird.envs.registry import make_adapter
    from bird.reward.checks import random_transitions
    from bird.state import Plan, SearchState

    cfg = compose_cfg("method=prm4rl", "env=metaworld/drawer_open")
    adapter = make_adapter(cfg.env)
    return cfg, SearchState(adapter.spec, Plan(1, 1, 10, 10, 1, 1), 0, random_transitions(adapter, 16, 0))


def _offline_program(state) -> str:
    from bird.llm.offline.plan_synth import answer_progress
    from bird.prompts import obs_fields_context

    text = answer_progress({"obs_fields": obs_fields_context(state.spec)}, "test")
    return get("contract", "progress_program").extract(text).code


def test_progress_screen_passes_the_offline_program_and_screens_a_falling_phi(drawer_state):
    from bird.types import Candidate

    cfg, state = drawer_state
    code = _offline_program(state)
    screen = get("screen", "progress_expert")
    failure, verdict = screen(Candidate("c", 1, 0, [], code=code), cfg, state)
    assert failure is None and verdict["K"] == 2 and verdict["expert"]["psi_reaches_last"]
    falling = code.replace("return (k + own) / len(plan_list)", "return -(k + own) / len(plan_list)")
    failure, verdict = screen(Candidate("c", 1, 0, [], code=falling), cfg, state)
    assert failure is not None and failure.kind == FailureKind.SCREENED and "non-decreasing" in failure.reason
    assert verdict["expert"]["drop_fraction"] > 0.9


def test_subtask_prior_appends_the_one_hot_of_psi(drawer_state):
    from bird.learners.augment import SubtaskPrior

    cfg, state = drawer_state
    with SandboxedReward(_offline_program(state), state.spec.obs_index, contract="progress_program") as prog:
        prior = SubtaskPrior(prog, get("obs_augment", "subtask_onehot")(prog.plan_list))
        obs = state.smoke_batch["obs"][:4]
        out = prior(obs)
        _, comps = prog(obs, np.zeros((4, 1)), obs)
    assert out.shape == (4, obs.shape[1] + 2)
    np.testing.assert_array_equal(out[:, -2:].argmax(axis=1), comps["subtask"].astype(int))
