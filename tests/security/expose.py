"""Run a command (as root) in a private mount namespace where the directories that other users cannot enter on the
way to PATHs (a checkout and its venv inside `mktemp -d`, /root holding pyenv) are replaced by world-enterable
copies: a tmpfs holding bind mounts of the same entries. The files themselves keep their modes and owners.

    python expose.py PATH... -- COMMAND ARG...

The security tests use it to run the unprivileged driver from a checkout in a 0700 directory: the test user then
sees what an unprivileged user sees of their own checkout, and nothing changes outside this command."""

from __future__ import annotations

import ctypes
import os
import sys

_CLONE_NEWNS, _MS_BIND, _MS_REC, _MS_PRIVATE = 0x00020000, 4096, 16384, 1 << 18
_libc = ctypes.CDLL(None, use_errno=True)


def blocked(paths: list[str]) -> list[str]:
    """Directories on the way to `paths` that other users cannot enter, outermost first."""
    found: list[str] = []
    for path in paths:
        parts = os.path.realpath(path).split("/")[1:]
        for i in range(1, len(parts) + 1):
            here = "/" + "/".join(parts[:i])
            if os.path.isdir(here) and not os.stat(here).st_mode & 0o001 and here not in found:
                found.append(here)
    return sorted(found, key=lambda p: p.count("/"))


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = [s.encode() if s is not None else None for s in (source, target, fstype, data)]
    if _libc.mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), enc[3]) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target}: {os.strerror(err)}")


def _open_up(directory: str) -> None:
    """Cover `directory` with a 0755 tmpfs that holds bind mounts (or copies of symlinks) of its entries."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    entries = os.listdir(fd)
    _mount("tmpfs", directory, "tmpfs", 0, "mode=0755")
    for name in entries:
        source, target = f"/proc/self/fd/{fd}/{name}", os.path.join(directory, name)
        if os.path.islink(source):
            os.symlink(os.readlink(source), target)
            continue
        if os.path.isdir(source):
            os.mkdir(target)
        else:
            open(target, "w").close()
        _mount(source, target, None, _MS_BIND | _MS_REC)


def main() -> None:
    split = sys.argv.index("--")
    paths, command = sys.argv[1:split], sys.argv[split + 1:]
    if _libc.unshare(_CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    for directory in blocked(paths):
        _open_up(directory)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
