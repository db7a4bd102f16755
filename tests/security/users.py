"""The unprivileged user the security tests create (as root), and a Python that user can run bird with."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from expose import blocked

__all__ = ["TEST_USER", "ensure_user", "as_user", "user_python", "needed_paths"]

TEST_USER = "bird-sandbox-test"
HERE = Path(__file__).resolve().parent


def ensure_user() -> tuple[int, int] | str:
    """(uid, gid) of the test user, created when missing (as root); or why there is none."""
    if os.geteuid() != 0:
        return "the tests run unprivileged already: no second user can be made"
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is not installed"
    try:
        entry = pwd.getpwnam(TEST_USER)
    except KeyError:
        if shutil.which("useradd") is None:
            return "useradd is not installed"
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", TEST_USER],
                       check=True, capture_output=True)
        entry = pwd.getpwnam(TEST_USER)
    return entry.pw_uid, entry.pw_gid


def needed_paths() -> list[str]:
    """What the test user must reach to run bird from this checkout: the checkout, its site-packages (and the
    directories its .pth files add), the interpreter and its standard library."""
    site_dir = sysconfig.get_paths()["purelib"]
    paths = [str(HERE.parents[1]), site_dir, os.path.realpath(sys.executable), sysconfig.get_paths()["stdlib"]]
    for pth in glob.glob(os.path.join(site_dir, "*.pth")):
        paths += [line.strip() for line in Path(pth).read_text().splitlines() if line.startswith("/")]
    return [p for p in paths if os.path.exists(p)]


def as_user(uid: int, gid: int) -> list[str]:
    """The command prefix that runs as the test user. When this checkout (or its venv, or the interpreter) lies
    behind a directory others cannot enter (a clone in `mktemp -d`, /root), the command runs in a private mount
    namespace where those directories are opened up (expose.py): the user reads the checkout as an unprivileged
    owner of it would, and nothing changes for anyone else."""
    switch = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]
    paths = needed_paths()
    if not blocked(paths):
        return switch
    return [sys.executable, "-I", str(HERE / "expose.py"), *paths, "--", *switch]


def user_python(uid: int, gid: int) -> tuple[str, str] | str:
    """An interpreter of this Python version the test user can execute and import numpy and pyseccomp with."""
    site_dir = sysconfig.get_paths()["purelib"]
    major_minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    for python in dict.fromkeys([os.path.realpath(sys.executable), f"/usr/bin/python{major_minor}"]):
        # it must also start itself as that user (the host starts workers with sys.executable)
        code = (f"import site, subprocess, sys; site.addsitedir({site_dir!r}); import numpy, pyseccomp, bird.reward; "
                "subprocess.run([sys.executable, '-I', '-c', 'import encodings'], check=True)")
        probe = subprocess.run([*as_user(uid, gid), python, "-I", "-c", code], capture_output=True, text=True)
        if probe.returncode == 0:
            return python, site_dir
    return (f"no Python {major_minor} that user {TEST_USER} can run with this checkout's packages "
            f"(files of the installation or checkout are not readable by other users: {probe.stderr[-300:]})")
