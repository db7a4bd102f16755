"""Through the worker's globals, write forged protocol frames to every fd it might use for results."""
# class: protocol
# expect: rejected


def compute_reward(obs, action, next_obs, info):
    def walk():
        frame = gen.gi_frame.f_back
        while frame is not None and "os" not in frame.f_globals:
            frame = frame.f_back
        yield frame.f_globals["os"]

    gen = walk()
    os = next(gen)
    for fd in range(1, 20):
        try:
            os.write(fd, b"\xff\xff\xff\x7f" + b"{" * 64)
        except OSError:
            pass
    return next_obs["x"], {}
