"""A clean reward program over named fields trains PPO for a few hundred steps (one full episode) on metaworld/reach."""

from __future__ import annotations

import numpy as np
import pytest

from bird.config.schema import EnvConfig, TrainConfig
from bird.learners.job import TrainJob
from bird.learners.sb3_ppo import train_ppo

CLEAN = """import numpy as np

def compute_reward(obs, action, next_obs, info):
    dist = np.linalg.norm(next_obs["hand_pos"] - next_obs["goal_pos"], axis=-1)
    return -dist, {"hand_to_goal": dist}
"""


@pytest.mark.slow
def test_clean_reward_program_trains_on_reach(tmp_path):
    job = TrainJob(
        candidate_id="c0", code=CLEAN, env=EnvConfig(id="metaworld/reach", description="Reach the goal.", horizon=500),
        train=TrainConfig(), seed=0, env_steps=512, n_envs=1, n_checkpoints=1, eval_episodes=1,
        call_timeout_s=10.0, memory_mb=2048, out_dir=str(tmp_path),
    )
    result = train_ppo(job)
    assert result.failure is None, result.failure
    assert result.env_steps >= 512 and result.curve
    last = result.curve[-1]
    assert 0.0 <= last.score <= 1.0 and last.episode_length == 500
    assert "hand_to_goal" in last.components and np.isfinite(last.own_return)
    assert (tmp_path / "curve.csv").exists()
