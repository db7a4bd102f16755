import numpy as np


def compute_reward(obs, action, next_obs, info):
    forward = next_obs["rootx_vel"]
    healthy = np.where(np.abs(next_obs["rooty_angle"]) < 0.2, 1.0, 0.0)
    ctrl = -1e-3 * np.sum(np.square(action), axis=-1)
    reward = forward + healthy + ctrl
    return reward, {"forward": forward, "healthy": healthy, "ctrl": ctrl}
