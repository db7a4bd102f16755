"""Component names carrying terminal escapes, newlines, bidi overrides and 10,000 characters."""
# class: output-conversion
# expect: contained
import numpy as np


def compute_reward(obs, action, next_obs, info):
    r = np.zeros(len(action))
    return r, {"\x1b[2J\x1b[31mok": r, "line\nbreak\r\x00": r, "\u202eevil": r, "n" * 10000: r}
