"""Unbounded recursion."""
# class: resources
# expect: contained
# runtime-reason: recursion


def deeper(n):
    return deeper(n + 1) + 1


def compute_reward(obs, action, next_obs, info):
    return next_obs["x"] + deeper(0), {}
