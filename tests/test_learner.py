"""SB3 PPO learner: reproducible for a fixed seed; the relabeller's reward scaling matches VecNormalize."""

import numpy as np
import pytest
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from bird.config.schema import EnvConfig, TrainConfig
from bird.learners.job import TrainJob
from bird.learners.relabel import ReturnNormalizer

CODE = (
    "import numpy as np\n\ndef compute_reward(obs, action, next_obs, info):\n"
    "    up = np.exp(-next_obs['hinge_angle'] ** 2 / 0.1)\n    return up, {'upright': up}\n"
)


def _job(tmp_path, code, seed=0):
    return TrainJob("t", code, EnvConfig(id="mujoco/inverted_pendulum", description="x"), TrainConfig(), seed,
                    1024, 2, 2, 2, 5.0, 2048, str(tmp_path))


@pytest.mark.slow
def test_training_is_reproducible_for_a_fixed_seed(tmp_path):
    from bird.learners.sb3_ppo import train_ppo

    a = train_ppo(_job(tmp_path / "a", CODE))
    b = train_ppo(_job(tmp_path / "b", CODE))
    assert a.ok and b.ok
    assert set(a.curve[-1].components) == {"upright"}  # a program's components are reported (the oracle's are not)
    assert [c.score for c in a.curve] == [c.score for c in b.curve]
    assert [c.own_return for c in a.curve] == [c.own_return for c in b.curve]
    assert (tmp_path / "a" / "curve.csv").read_text() == (tmp_path / "b" / "curve.csv").read_text()


@pytest.mark.slow
def test_reference_reward_training_reports_components_empty_and_returns_equal(tmp_path):
    from bird.learners.sb3_ppo import train_ppo

    res = train_ppo(_job(tmp_path, None))
    assert res.ok
    assert res.curve[-1].components == {}
    finished = [c for c in res.curve if not np.isnan(c.own_return)]
    assert finished and all(c.own_return == c.reference_return for c in finished)


@pytest.mark.slow
def test_a_program_that_crashes_mid_training_is_recorded(tmp_path):
    from bird.learners.sb3_ppo import train_ppo

    crash = CODE.replace("up = ", "up = 1.0 / (next_obs['slider_pos'] > 1e9) * 0 + ")  # inf → non-finite
    res = train_ppo(_job(tmp_path, crash))
    assert not res.ok and res.failure.kind == "non_finite"


def test_return_normalizer_matches_vecnormalize():
    rng = np.random.default_rng(0)
    rewards = rng.normal(size=(50, 3))
    dones = rng.random((50, 3)) < 0.1

    class _Replay(DummyVecEnv):
        def __init__(self):
            import gymnasium as gym

            super().__init__([lambda: gym.make("CartPole-v1")] * 3)
            self.t = 0

        def step_wait(self):
            out = np.zeros((3, 4), dtype=np.float32), rewards[self.t].copy(), dones[self.t].copy(), [{}] * 3
            self.t += 1
            return out

    vn = VecNormalize(_Replay(), norm_obs=False, norm_reward=True, gamma=0.99)
    vn.reset()
    expected = np.stack([vn.step(np.zeros(3, dtype=int))[1] for _ in range(50)])
    got = ReturnNormalizer(3, 0.99)(rewards, dones)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
