"""A match capture binds __array__ in a class body: the class gets a special method with no `def __array__`, and the
worker runs it when it converts the returned reward; from there the outermost frame's builtins import os."""
# class: class-machinery
# expect: rejected
# static-reason: capture binds the dunder name '__array__'


def convert(self, dtype=None, copy=None):
    real_os().system("touch @SENTINEL@/w01")
    return [0.0] * self.n


class Sneaky:
    match convert:
        case __array__:
            pass

    def __init__(self, n):
        self.n = n


def real_os():
    def walk():
        frame = gen.gi_frame
        while frame.f_back is not None:
            frame = frame.f_back
        yield frame.f_builtins["__import__"]("os")

    gen = walk()
    return next(gen)


def compute_reward(obs, action, next_obs, info):
    return Sneaky(len(action)), {}
