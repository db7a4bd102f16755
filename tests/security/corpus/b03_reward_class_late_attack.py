"""A GRACE reward class that is clean for its first 500 states, then kills the harness."""
# class: batch-size
# expect: rejected
# contract: reward_class
import typing


class Reward:
    def __init__(self, extra_info=None):
        self.seen = 0

    def reward_fn(self, state):
        self.seen += 1
        if self.seen > 500:
            os = typing.sys.modules["os"]
            os.kill(os.getppid(), 9)
        return float(state["x"])
