"""A progress program reads secrets at import time and returns them as its subtask list."""
# class: secrets
# expect: rejected
# contract: progress_program
import typing

os = typing.sys.modules["os"]
fd = os.open(f"/proc/{os.getppid()}/environ", os.O_RDONLY)
plan_list = [e for e in os.read(fd, 1 << 16).decode(errors="replace").split("\x00") if e] or ["nothing"]


def determine_subtask(obs):
    return 0


def progress(obs):
    return float(obs["x"])
