"""numpy's DataSource creates its cache directory and fetches a URL (files and network in one helper)."""
# class: network
# expect: rejected
from numpy.lib.npyio import DataSource


def compute_reward(obs, action, next_obs, info):
    DataSource("@SENTINEL@/cache").open("http://127.0.0.1:@PORT@/n05")
    return next_obs["x"], {}
