"""An error message of 100,000 characters full of terminal escapes and NUL bytes."""
# class: output-conversion
# expect: contained


def compute_reward(obs, action, next_obs, info):
    raise ValueError("\x1b[2J\x1b[31m" + "A" * 100000 + "\r\x00\x07")
