"""The unprivileged user the security tests create (as root), and a Python that user can run bird with."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import sysconfig

__all__ = ["TEST_USER", "ensure_user", "as_user", "user_python"]

TEST_USER = "bird-sandbox-test"


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


def as_user(uid: int, gid: int) -> list[str]:
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--"]


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
            f"(the installation or checkout is not readable by other users)")
