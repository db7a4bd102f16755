"""numpy.save imported by name: a new file appears (the file-size limit only stops its content)."""
# class: files
# expect: rejected
from numpy import save


def compute_reward(obs, action, next_obs, info):
    save("@SENTINEL@/n10", next_obs["x"])
    return next_obs["x"], {}
