"""Landlock refuses to open files, not to stat them: having reached the real os through a frame walk, learn the size
and owner of a host file, the host's working directory (readlink) and whether its account files exist."""
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
    probes = {
        "victim size": lambda: os.stat("@VICTIM@").st_size,
        "victim owner": lambda: os.stat("@VICTIM@").st_uid,
        "host cwd": lambda: os.readlink("/proc/@HOST_PID@/cwd"),
        "host exe": lambda: os.readlink("/proc/@HOST_PID@/exe"),
        "passwd": lambda: os.stat("/etc/passwd").st_size,
        "sentinel listing": lambda: os.listdir("@SENTINEL@"),
    }
    seen = []
    for what, probe in probes.items():
        try:
            seen.append(f"{what}={probe()!r}")
        except Exception:  # OSError: the program's builtins have no name for it
            pass
    raise ValueError("LEAKED " + "; ".join(seen) if seen else "no host metadata")
