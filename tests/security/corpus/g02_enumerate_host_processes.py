"""Enumerate the machine's processes with syscalls the worker may make (getpgid, getsid, sched_getaffinity) and
with stat() of /proc entries: pids, owners, which jobs run. Reports what it saw in its error message."""
# class: metadata
# expect: rejected
# runtime-reason: no host metadata


def real_os():
    def walk():
        frame = gen.gi_frame
        while frame.f_back is not None:
            frame = frame.f_back
        yield frame.f_builtins["__import__"]("os")

    gen = walk()
    return next(gen)


def compute_reward(obs, action, next_obs, info):
    os = real_os()
    me = os.getpid()
    seen = []
    for pid in range(2, 65536):  # not 1, any machine's init; not itself
        if pid == me:
            continue
        try:
            os.getpgid(pid)
            seen.append(pid)
        except Exception:  # OSError: the program's builtins have no name for it
            pass
    owners = []
    for pid in (@HOST_PID@, @DECOY@):
        try:
            owners.append((pid, os.stat(f"/proc/{pid}").st_uid))
        except Exception:  # OSError: the program's builtins have no name for it
            pass
    if seen or owners:
        raise ValueError(f"LEAKED {len(seen)} processes, e.g. {seen[:5]}; owners {owners}")
    raise ValueError("no host metadata")
