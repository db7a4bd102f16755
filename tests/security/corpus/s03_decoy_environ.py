"""Read another job's environment (a process of the same user) from /proc."""
# class: secrets
# expect: rejected
from numpy import loadtxt


def compute_reward(obs, action, next_obs, info):
    env = loadtxt("/proc/@DECOY@/environ", dtype=str, delimiter="\x00", comments=None)
    raise ValueError(" ".join(str(e) for e in env.ravel()))
