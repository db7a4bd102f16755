"""Determinism: the same job and seed train the same policy bit for bit with SB3 on the CPU (one torch thread), and an
unseeded learner put back makes the check fail (its positive control); result.json's `determinism` record. The
search-level checks are elsewhere: replayed cells (tests/bundle), Ray against the local pool (tests/cluster),
resumed searches (tests/test_resume*.py), JAX on the CPU (tests/jaxpath/test_jax_determinism.py)."""

from __future__ import annotations

import pytest

from bird.environment import describe_environment, determinism
from bird.learners.job import make_job

REWARD = '''import numpy as np


def compute_reward(obs, action, next_obs, info):
    upright = -np.abs(next_obs["hinge_angle"])
    ctrl = -1e-3 * np.sum(np.square(action), axis=-1)
    return upright + ctrl, {"upright": upright, "ctrl": ctrl}
'''


def _train(cfg, tmp_path, name: str):
    from bird.learners.sb3_ppo import train_ppo

    result = train_ppo(make_job(cfg, name, REWARD, 3, 512, tmp_path / name))
    assert result.ok, result.failure
    return [(c.env_steps, c.score, c.quantity, c.own_return, c.reference_return, c.episode_length,
             tuple(sorted(c.components.items()))) for c in result.curve]


@pytest.fixture(scope="module")
def sb3_cfg(compose_cfg):
    return compose_cfg("env=mujoco/inverted_pendulum", "env.horizon=100", "verify.call_timeout_s=60")


def test_sb3_on_the_cpu_trains_the_same_curve_twice(sb3_cfg, tmp_path):
    first = _train(sb3_cfg, tmp_path, "a")
    assert first == _train(sb3_cfg, tmp_path, "b")  # every float equal, not approximately
    assert len(first) == sb3_cfg.budget.n_checkpoints


def test_positive_control_an_unseeded_learner_fails_the_same_check(sb3_cfg, tmp_path, monkeypatch):
    import bird.learners.sb3_ppo as sb3

    class Unseeded(sb3.PPO):
        def __init__(self, *args, **kwargs):
            kwargs["seed"] = None  # the policy's initial weights and sampling from torch's unseeded generator
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(sb3, "PPO", Unseeded)
    assert _train(sb3_cfg, tmp_path, "a") != _train(sb3_cfg, tmp_path, "b")


def test_result_records_what_is_not_bit_reproducible(compose_cfg):
    env = describe_environment()
    cpu = determinism(compose_cfg(), env, sampled_llm=False)
    assert cpu["learner"] and cpu["sources"] == [] and cpu["torch_threads_per_training"] == 1
    assert cpu["llm"] == "a deterministic program (same request, same answer)"
    gpu = {**env, "gpus": ["NVIDIA H200"], "jax_gpu_plugin": "jax-cuda12-plugin",
           "threads": {**env["threads"], "XLA_FLAGS": None, "JAX_PLATFORMS": None}}
    jax = compose_cfg("env=brax/hopper", "train.learner=jax_ppo")
    record = determinism(jax, gpu, sampled_llm=True)
    assert not record["learner"] and record["device"] == "gpu" and "xla_gpu_deterministic_ops" in record["sources"][0]
    assert record["llm"].startswith("sampled from a model")
    pinned = {**gpu, "threads": {**gpu["threads"], "XLA_FLAGS": "--xla_gpu_deterministic_ops=true"}}
    assert determinism(jax, pinned, sampled_llm=True)["learner"]
    on_cpu = {**gpu, "threads": {**gpu["threads"], "JAX_PLATFORMS": "cpu"}}
    assert determinism(jax, on_cpu, sampled_llm=False)["device"] == "cpu"
    ray = determinism(compose_cfg("train.executor=ray", "ray.address=auto"), env, sampled_llm=False)
    assert not ray["learner"] and "cluster" in ray["sources"][0]
