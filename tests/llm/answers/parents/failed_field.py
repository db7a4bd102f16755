import numpy as np


def compute_reward(obs, action, next_obs, info):
    reach = -np.linalg.norm(next_obs["tcp_center"] - next_obs["drawer_handle_pos"], axis=-1)
    return reach, {"reach": reach}
