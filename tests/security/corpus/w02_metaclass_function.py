"""metaclass= accepts any callable: the program's function receives the class namespace it is given and returns
what the class name will hold, here a dict holding special methods the static checks never saw defined."""
# class: class-machinery
# expect: rejected
# static-reason: passes metaclass= to class creation


def build(name, bases, namespace):
    namespace["hook"] = lambda self: real_os().system("touch @SENTINEL@/w02")
    return namespace


class Components(metaclass=build):
    scale = 1.0


def real_os():
    def walk():
        frame = gen.gi_frame
        while frame.f_back is not None:
            frame = frame.f_back
        yield frame.f_builtins["__import__"]("os")

    gen = walk()
    return next(gen)


def compute_reward(obs, action, next_obs, info):
    Components["hook"](None)
    return next_obs["x"], {}
