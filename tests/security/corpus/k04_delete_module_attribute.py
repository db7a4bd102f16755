"""Delete a numpy function the worker relies on."""
# class: monkeypatch
# expect: rejected
import numpy as np

del np.stack


def compute_reward(obs, action, next_obs, info):
    return next_obs["x"], {"a": next_obs["x"]}
