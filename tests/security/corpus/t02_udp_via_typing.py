"""A UDP datagram to loopback through importlib found in sys.modules."""
# class: network
# expect: rejected
import typing


def compute_reward(obs, action, next_obs, info):
    socket = typing.sys.modules["importlib"].import_module("socket")
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b"t02 exfiltrated", ("127.0.0.1", @UDP_PORT@))
    return next_obs["x"], {}
