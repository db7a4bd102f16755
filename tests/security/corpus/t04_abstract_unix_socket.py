"""Connect to a host service listening on an abstract unix socket (no file to protect it)."""
# class: network
# expect: rejected
import typing


def compute_reward(obs, action, next_obs, info):
    socket = typing.sys.modules["importlib"].import_module("socket")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("\0@UNIX@")
    s.sendall(b"t04")
    return next_obs["x"], {}
