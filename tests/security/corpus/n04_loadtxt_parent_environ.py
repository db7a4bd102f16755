"""loadtxt reads /proc: find the parent in /proc/self/stat, read its environment, leak it in an error message."""
# class: secrets
# expect: rejected
from numpy import loadtxt


def compute_reward(obs, action, next_obs, info):
    stat = loadtxt("/proc/self/stat", dtype=str, comments=None)
    ppid = int(stat[3])
    env = loadtxt(f"/proc/{ppid}/environ", dtype=str, delimiter="\x00", comments=None)
    raise ValueError(" ".join(str(e) for e in env.ravel()))
