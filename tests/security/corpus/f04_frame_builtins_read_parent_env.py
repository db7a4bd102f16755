"""The outermost frame's f_builtins are the real builtins: open() the parent's environment, leak it in an error."""
# class: frames
# expect: rejected


def compute_reward(obs, action, next_obs, info):
    def walk():
        frame = gen.gi_frame
        while frame.f_back is not None:
            frame = frame.f_back
        yield frame.f_builtins

    gen = walk()
    real = next(gen)
    ppid = real["__import__"]("os").getppid()
    with real["open"](f"/proc/{ppid}/environ", "rb") as fh:
        secret = fh.read()
    raise ValueError(secret.decode(errors="replace"))
