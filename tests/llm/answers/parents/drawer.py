import numpy as np


def _reach(hand, handle):
    return np.exp(-5.0 * np.linalg.norm(hand - handle, axis=-1))


def compute_reward(obs, action, next_obs, info):
    reach = _reach(next_obs["hand_pos"], next_obs["drawer_handle_pos"])
    opened = np.clip(next_obs["goal_pos"][:, 1] - next_obs["drawer_handle_pos"][:, 1], 0.0, 0.3)
    reward = reach + 2.0 * (0.3 - opened)
    return reward, {"reach": reach, "open": 0.3 - opened}
