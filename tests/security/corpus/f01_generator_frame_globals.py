"""A running generator's frame links back to the worker's frames, whose globals hold `os`."""
# class: frames
# expect: rejected


def compute_reward(obs, action, next_obs, info):
    def walk():
        frame = gen.gi_frame.f_back
        while frame is not None and "os" not in frame.f_globals:
            frame = frame.f_back
        yield frame.f_globals["os"]

    gen = walk()
    next(gen).system("touch @SENTINEL@/f01")
    return next_obs["x"], {}
