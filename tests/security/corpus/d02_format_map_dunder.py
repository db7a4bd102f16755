"""format_map with dunder fields lists every class in the interpreter."""
# class: dynamic-attributes
# expect: rejected


def compute_reward(obs, action, next_obs, info):
    raise ValueError("{x.__class__.__base__.__subclasses__}".format_map({"x": ()}))
