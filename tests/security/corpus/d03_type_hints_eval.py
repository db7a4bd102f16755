"""typing.get_type_hints evaluates annotation strings: a dunder walk hidden in a string runs a shell command."""
# class: dynamic-attributes
# expect: rejected
import typing


def payload(x: "[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]"
               ".__init__.__globals__['system']('touch @SENTINEL@/d03')"):
    return x


def compute_reward(obs, action, next_obs, info):
    typing.get_type_hints(payload)
    return next_obs["x"], {}
