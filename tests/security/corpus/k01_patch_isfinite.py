"""Monkeypatch numpy at import time so that the worker's own checks see every value as finite."""
# class: monkeypatch
# expect: rejected
import numpy as np

np.isfinite = lambda x: True


def compute_reward(obs, action, next_obs, info):
    return next_obs["x"] / 0.0, {}
