import numpy as np

REWARD_WEIGHTS = {"run": 1.0, "ctrl": 0.1}


def compute_reward(obs, action, next_obs, info):
    run = next_obs["rootx_vel"]
    ctrl = -np.sum(action ** 2, axis=-1)
    return {"run": run, "ctrl": ctrl}
