"""Import socket through the real builtins found on a frame, connect to a service on loopback, send data."""
# class: network
# expect: rejected


def compute_reward(obs, action, next_obs, info):
    def walk():
        frame = gen.gi_frame
        while frame.f_back is not None:
            frame = frame.f_back
        yield frame.f_builtins["__import__"]

    gen = walk()
    socket = next(gen)("socket")
    conn = socket.create_connection(("127.0.0.1", @PORT@), timeout=1)
    conn.sendall(b"t01 exfiltrated")
    conn.close()
    return next_obs["x"], {}
