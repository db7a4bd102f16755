"""train.learner=jax_ppo on the CPU trains the same curve twice from the same seed, bit for bit; with the seed's
keys replaced by unseeded ones (the positive control) the same check fails."""

import os

import jax
from jax_programs import FORWARD


def _curve(result):
    assert result.ok, result.failure
    return [(c.env_steps, c.score, c.quantity, c.own_return, c.reference_return, c.episode_length,
             tuple(sorted(c.components.items()))) for c in result.curve]


def test_jax_ppo_on_the_cpu_trains_the_same_curve_twice(make_jobs):
    from bird.learners.jax_ppo import train_jax_ppo

    assert jax.default_backend() == "cpu"
    jobs = make_jobs([(FORWARD, 5)], env_steps=192)
    first = _curve(train_jax_ppo(jobs)[0])
    assert first == _curve(train_jax_ppo(jobs)[0]) and len(first) == 2


def test_positive_control_unseeded_keys_fail_the_same_check(make_jobs, monkeypatch):
    from bird.learners.jax_ppo import train_jax_ppo

    seeded = jax.random.PRNGKey
    monkeypatch.setattr(jax.random, "PRNGKey", lambda seed: seeded(int.from_bytes(os.urandom(4), "little")))
    jobs = make_jobs([(FORWARD, 5)], env_steps=192)
    assert _curve(train_jax_ppo(jobs)[0]) != _curve(train_jax_ppo(jobs)[0])
