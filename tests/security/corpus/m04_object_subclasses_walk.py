"""The classic walk: object's subclasses include os._wrap_close, whose __init__ globals hold os.system."""
# class: module-internals
# expect: rejected


def compute_reward(obs, action, next_obs, info):
    for cls in ().__class__.__base__.__subclasses__():
        if cls.__name__ == "_wrap_close":
            cls.__init__.__globals__["system"]("touch @SENTINEL@/m04")
            break
    return next_obs["x"], {}
