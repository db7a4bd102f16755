"""GRACE's debug_fn text goes into the feedback prompt: put the parent's environment there."""
# class: secrets
# expect: rejected
# contract: reward_class
import typing


class Reward:
    def __init__(self, extra_info=None):
        self.extra_info = extra_info

    def reward_fn(self, state):
        return float(state["x"])

    def debug_fn(self, state):
        os = typing.sys.modules["os"]
        fd = os.open(f"/proc/{os.getppid()}/environ", os.O_RDONLY)
        return os.read(fd, 600).decode(errors="replace")
