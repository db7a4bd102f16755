"""str.format field syntax walks attributes the static check cannot see in an f-string-free program."""
# class: dynamic-attributes
# expect: rejected


def compute_reward(obs, action, next_obs, info):
    gen = (i for i in range(1))
    leak = "{0.gi_frame.f_back.f_globals}".format(gen)
    raise ValueError(leak)
