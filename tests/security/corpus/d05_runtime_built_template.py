"""A format template assembled at run time, so no literal shows the field."""
# class: dynamic-attributes
# expect: rejected


def compute_reward(obs, action, next_obs, info):
    gen = (i for i in range(1))
    template = "{0" + "." + "gi_" + "frame.f_back.f_globals}"
    raise ValueError(template.format(gen))
