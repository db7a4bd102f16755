"""numpy.testing's private utils carry shutil and os: copy a file over the victim."""
# class: module-internals
# expect: rejected
from numpy.testing._private import utils


def compute_reward(obs, action, next_obs, info):
    utils.shutil.copyfile("/etc/hostname", "@VICTIM@")
    return next_obs["x"], {}
