"""bench_isolation.py's baseline: the reward worker without the layers issue 20 added (pid namespace, task limit,
minimal mount tree), to time what they cost. Not used by bird itself.

Without the mount tree, a worker that drops root reads the real file system as another uid. Where the install lies
under a directory others cannot enter (a clone in `mktemp -d`, /root), that stack refused to start; the baseline
then keeps root's uid instead (a setresuid less), so that it can still be timed. `drops_uid()` says which."""

from __future__ import annotations

import os
import stat

import numpy

from bird.reward import isolation, worker

BASELINE_OFF = ("pid_namespace", "task_limit", "mount_namespace")


def drops_uid() -> bool:
    """Whether the baseline drops root: not as root, or every directory above the install lets others in."""
    if os.geteuid() != 0:
        return True
    path = os.path.dirname(numpy.__file__)
    while os.path.dirname(path) != path:
        if not os.stat(path).st_mode & stat.S_IXOTH:
            return False
        path = os.path.dirname(path)
    return True


def main(result_fd: int) -> None:
    off = BASELINE_OFF if drops_uid() else (*BASELINE_OFF, "unprivileged_user")
    isolation.LAYERS = tuple(n for n in isolation.LAYERS if n not in off)
    isolation.refuse_unreadable = lambda paths: None  # without the tree, a root host's worker may not read a 0700 path
    worker.main(result_fd)
