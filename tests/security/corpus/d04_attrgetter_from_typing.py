"""operator.attrgetter (reached through typing) takes attribute names as strings: the walk is data, not syntax."""
# class: dynamic-attributes
# expect: rejected
import typing


def compute_reward(obs, action, next_obs, info):
    get = typing.operator.attrgetter
    names = ["_".join(["", "", "class", "", ""]), "_".join(["", "", "base", "", ""]),
             "_".join(["", "", "subclasses", "", ""])]
    subclasses = get(".".join(names))(())()
    for cls in subclasses:
        if get("_".join(["", "", "name", "", ""]))(cls) == "_wrap_close":
            init = get("_".join(["", "", "init", "", ""]))(cls)
            get("_".join(["", "", "globals", "", ""]))(init)["system"]("touch @SENTINEL@/d04")
    return next_obs["x"], {}
