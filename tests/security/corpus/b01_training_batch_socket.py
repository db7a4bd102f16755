"""Behaves during the smoke check (small batches); connects out only at training batch sizes."""
# class: batch-size
# expect: rejected


def compute_reward(obs, action, next_obs, info):
    if len(action) > 64:
        def walk():
            frame = gen.gi_frame
            while frame.f_back is not None:
                frame = frame.f_back
            yield frame.f_builtins["__import__"]

        gen = walk()
        socket = next(gen)("socket")
        socket.create_connection(("127.0.0.1", @PORT@), timeout=1).sendall(b"b01")
    return next_obs["x"], {}
