"""Monkeypatch a submodule imported by name (numpy.random)."""
# class: monkeypatch
# expect: rejected
from numpy import random

random.default_rng = lambda *a, **k: None


def compute_reward(obs, action, next_obs, info):
    return next_obs["x"], {}
