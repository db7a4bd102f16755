"""train.learner=jax_ppo on the CPU trains the same curves twice from the same seeds, bit for bit; with the seed's
keys replaced by unseeded ones (the positive control) the same check fails. The jobs are test_jax_learner.py's
2-wide pair, so the session compiles their program once for both files."""

import os

import jax
from jax_programs import FORWARD, UPRIGHT


def _curves(results):
    return [_curve(r) for r in results]


def _curve(result):
    assert result.ok, result.failure
    return [(c.env_steps, c.score, c.quantity, c.own_return, c.reference_return, c.episode_length,
             tuple(sorted(c.components.items()))) for c in result.curve]


def test_jax_ppo_on_the_cpu_trains_the_same_curve_twice(make_jobs):
    from bird.learners.jax_ppo import train_jax_ppo

    assert jax.default_backend() == "cpu"
    jobs = make_jobs([(FORWARD, 5), (UPRIGHT, 6)], env_steps=192)
    first = _curves(train_jax_ppo(jobs))
    assert first == _curves(train_jax_ppo(jobs)) and [len(c) for c in first] == [2, 2]


def test_positive_control_unseeded_keys_fail_the_same_check(make_jobs, monkeypatch):
    from bird.learners.jax_ppo import train_jax_ppo

    seeded = jax.random.PRNGKey
    monkeypatch.setattr(jax.random, "PRNGKey", lambda seed: seeded(int.from_bytes(os.urandom(4), "little")))
    jobs = make_jobs([(FORWARD, 5), (UPRIGHT, 6)], env_steps=192)
    first, second = _curves(train_jax_ppo(jobs)), _curves(train_jax_ppo(jobs))
    assert first[0] != second[0] and first[1] != second[1]
