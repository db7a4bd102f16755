"""numpy's savetxt imported by name (no `np.` attribute for a name list to catch) creates a file."""
# class: files
# expect: rejected
from numpy import savetxt


def compute_reward(obs, action, next_obs, info):
    savetxt("@SENTINEL@/n01.txt", [1.0, 2.0])
    return next_obs["x"], {}
