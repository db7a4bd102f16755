"""Fixtures for the security tests: a canary secret, an unprivileged user made for the tests, an interpreter that
user can run, and one run of the corpus driver per user (both started at once, then shared by every test)."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from users import as_user, ensure_user, user_python

HERE = Path(__file__).resolve().parent
DRIVER_TIMEOUT_S = 600


@dataclass
class DriverRun:
    user: str
    returncode: int
    stdout: str
    stderr: str
    results: list[dict]
    raw: str  # the results file as written


@pytest.fixture(scope="session")
def canary() -> str:
    return "sk-canary-" + secrets.token_hex(12)


@pytest.fixture(scope="session")
def test_user() -> tuple[int, int]:
    made = ensure_user()
    if isinstance(made, str):
        pytest.skip(made)
    return made


def _start_driver(prefix: list[str], python: str, site_dir: str | None, canary: str, out_dir: Path,
                  extra: list[str]) -> tuple[subprocess.Popen, Path]:
    out = out_dir / "results.json"
    cmd = [*prefix, python, "-I", str(HERE / "driver.py"), "--out", str(out), *extra]
    if site_dir:
        cmd += ["--site", site_dir]
    env = {"PATH": os.defpath, "BIRD_TEST_CANARY": canary, "OPENAI_API_KEY": canary, "ANTHROPIC_API_KEY": canary,
           "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=out_dir,
                            start_new_session=True)  # an attack on the host's process group hits only the driver
    return proc, out


def _finish(user: str, proc: subprocess.Popen, out: Path) -> DriverRun:
    try:
        stdout, stderr = proc.communicate(timeout=DRIVER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        stdout, stderr = proc.communicate()
    raw = out.read_text() if out.exists() else ""
    results = json.loads(raw)["results"] if raw else []
    return DriverRun(user, proc.returncode, stdout, stderr, results, raw)


@pytest.fixture(scope="session")
def corpus_runs(canary, tmp_path_factory):
    """The driver over the whole corpus and every escaped payload, as root and as the test user, in parallel."""
    started = {}
    root_dir = tmp_path_factory.mktemp("driver-root")
    started["root" if os.geteuid() == 0 else "unprivileged"] = _start_driver(
        [], sys.executable, None, canary, root_dir, [])
    user_skip = ""
    made = ensure_user()
    if isinstance(made, str):
        user_skip = made
    else:
        found = user_python(*made)
        if isinstance(found, str):
            user_skip = found
        else:
            user_dir = Path(tempfile.mkdtemp(prefix="bird-sec-user-"))
            os.chown(user_dir, *made)
            started["unprivileged"] = _start_driver(as_user(*made), found[0], found[1], canary, user_dir, [])
    runs: dict[str, DriverRun | str] = {user: _finish(user, *pair) for user, pair in started.items()}
    runs.setdefault("unprivileged", user_skip)
    runs.setdefault("root", "the tests do not run as root")
    yield runs
    if "unprivileged" in started:
        shutil.rmtree(user_dir, ignore_errors=True)


@pytest.fixture(params=["root", "unprivileged"])
def run(request, corpus_runs) -> DriverRun:
    got = corpus_runs[request.param]
    if isinstance(got, str):
        pytest.skip(f"{request.param}: {got}")
    return got
