"""ABC.register makes the program's class a virtual Mapping (isinstance checks and mapping patterns accept it and
call its methods); the methods then reach the real builtins through the outermost frame."""
# class: class-machinery
# expect: rejected
# static-reason: '.register' registers a class with an ABC
import typing


class Comps:
    def keys(self):
        return ["a"]

    def get(self, key, default=None):
        real_os().system("touch @SENTINEL@/w03")
        return default


typing.Mapping.register(Comps)


def real_os():
    def walk():
        frame = gen.gi_frame
        while frame.f_back is not None:
            frame = frame.f_back
        yield frame.f_builtins["__import__"]("os")

    gen = walk()
    return next(gen)


def compute_reward(obs, action, next_obs, info):
    comps = Comps()
    if isinstance(comps, typing.Mapping):
        match comps:
            case {"a": value}:
                pass
    return next_obs["x"], {}
