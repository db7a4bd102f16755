"""Shared fixtures: composed configs with test-speed overrides, a tiny custom generator for failure tests."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from run_kills import copy_at_event, killed_copy_of, killed_late

os.environ.setdefault("OMP_NUM_THREADS", "1")
# A JAX compilation cache for this session only, shared by this process and every process it starts (pool workers,
# command lines, bench scripts inherit the environment): a program compiles once per session, as on a clean CI
# machine, and tests never write to ~/.cache. Set BIRD_JAX_CACHE yourself to keep compiled programs between runs.
if "BIRD_JAX_CACHE" not in os.environ:
    os.environ["BIRD_JAX_CACHE"] = tempfile.mkdtemp(prefix="bird-jax-cache-")
    atexit.register(shutil.rmtree, os.environ["BIRD_JAX_CACHE"], True)

# XLA's CPU backend at its lowest optimisation level, with its older fusion emitters, for this session and every
# process it starts: less CPU per compile (figures in docs/testing.md). The programs are the same, only their machine
# code is less optimised, and every comparison in the suite is between runs made under the same flags. Users'
# programs compile at XLA's defaults; set XLA_FLAGS (even to "") to test with those.
os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true "
                                   "--xla_cpu_use_fusion_emitters=false")

import session_share  # noqa: E402  (tests/session_share.py: what xdist workers make once)

session_share.make_folder()
# bird's machine-wide caches (demonstrations, LLM responses) in the session's shared folder, not ~/.cache/bird
os.environ.setdefault("BIRD_CACHE_DIR", str(session_share.folder() / "cache"))

import background  # noqa: E402  (tests/background.py: long subprocesses beside the suite)
from smoke_overrides import SMOKE  # noqa: E402


@pytest.fixture(scope="session")
def compose_cfg():
    from bird.config.load import compose

    def _compose(*overrides: str):
        return compose([*SMOKE, *overrides])

    return _compose


# no network from the browser: no background services, no updates, no sync, no QUIC, no GPU process
CHROMIUM_FLAGS = ["--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
                  "--disable-quic", "--disable-gpu", "--autoplay-policy=no-user-gesture-required"]


@pytest.fixture(scope="session")
def chromium():
    """Debian's chromium driven by Playwright (the browser tests of the rating page and the leaderboard page)."""
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("no chromium (make test installs Debian's chromium when run as root)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        root = os.geteuid() == 0  # chromium's sandbox refuses to run as root
        browser = pw.chromium.launch(executable_path=path, args=CHROMIUM_FLAGS + (["--no-sandbox"] if root else []))
        yield browser
        browser.close()


# The env each method's shared smoke search runs on (methods that need demonstrations, a Pythonic class abstraction or
# a scripted expert run on Meta-World, which has them; MuJoCo has none of these). Add a line for a new method that needs it.
METHOD_SMOKE_ENV = {"grace": "metaworld/reach", "card": "metaworld/reach", "regot": "metaworld/drawer_open",
                    "prm4rl": "metaworld/drawer_open", "era_u": "metaworld/push", "era_s": "mujoco/hopper",
                    "t2r_zeroshot": "metaworld/push"}
# Short episodes and trainings for methods whose smoke search does much per candidate (judge calls on collected rollouts)
SHORT = ("env.horizon=100", "budget.env_steps=512", "budget.final_env_steps=512")
METHOD_SMOKE_EXTRA = {"rda": SHORT, "era_u": SHORT, "era_s": SHORT}


def method_smoke_overrides(method: str) -> tuple[str, ...]:
    """Overrides of a method's shared end-to-end smoke search (two iterations, offline generator; a generous per-call
    limit: under heavy machine load a sandbox timeout would make a resumed or repeated run differ)."""
    env = METHOD_SMOKE_ENV.get(method, "mujoco/inverted_pendulum")
    extra = ("demos.n_expert=2", "demos.n_negative=2", "demos.max_train=2", "train.collect_episodes=1") \
        if env.startswith("metaworld") else ()
    return (f"method={method}", f"env={env}", "budget.max_iterations=2", "verify.call_timeout_s=60", *extra,
            *METHOD_SMOKE_EXTRA.get(method, ()))


@pytest.fixture(scope="session")
def smoke_bundle() -> Path:
    """The recorded smoke runs (tests/analysis/fixtures/smoke_runs) packed once per session, shared by every test
    that reads a bundle (and by every xdist worker). Read it only: a test that edits a bundle edits a copy."""
    from bird.bundle import pack

    def make(folder: Path) -> str:
        pack([Path(__file__).parent / "analysis" / "fixtures" / "smoke_runs"], folder / "smoke.bird")
        return str(folder / "smoke.bird")

    return Path(session_share.once("smoke_bundle", make))


@pytest.fixture(scope="session")
def smoke_run(compose_cfg):
    """Memoised offline smoke searches, shared by every test that reads a real run directory in one session (and by
    every xdist worker): smoke_run(*overrides) -> (run directory, result.json content). Each keeps a copy of its run
    directory as a kill late in iteration 2 would have left it (`killed_copy`)."""
    runs: dict[tuple[str, ...], tuple] = {}

    def _search(overrides: tuple[str, ...], folder: Path) -> dict:
        from bird.loop import search

        path = folder / "smoke_run"
        with copy_at_event(killed_late(overrides), killed_copy_of(path)):
            return search(compose_cfg(*overrides), path)

    def _run(*overrides: str):
        if overrides not in runs:
            name = session_share.key("smoke_run", *overrides)
            result = session_share.once(name, lambda folder: _search(overrides, folder))
            runs[overrides] = (session_share.folder() / "once" / name / "smoke_run", result)
        return runs[overrides]

    return _run


@pytest.fixture(scope="session")
def method_smoke_run(smoke_run):
    """method_smoke_run(method) -> (run directory, result): the method's shared end-to-end smoke search."""
    return lambda method: smoke_run(*method_smoke_overrides(method))


@pytest.fixture(scope="session")
def method_smoke_config(compose_cfg):
    """method_smoke_config(method) -> the config of the method's shared smoke search."""
    return lambda method: compose_cfg(*method_smoke_overrides(method))


@pytest.fixture(scope="session")
def rehearse_prompts():
    """rehearse_prompts(cfg, workdir) -> Rehearsal: every prompt kind the method sends, without training
    (tests/prompt_rehearsal.py)."""
    from prompt_rehearsal import rehearse

    return rehearse


# Tests that fork this pytest process to apply the sandbox's OS layers in the child run first: later packages start
# Ray, JAX and web servers in this process, and in the full suite the layer tests then failed (unshare: EINVAL).
FORK_FIRST = ("tests/reward/", "tests/security/")
# The bench smoke tests run last: by then the bench scripts they read have run beside the suite (tests/background.py).
LAST = ("tests/bench/",)


def _order(items: list) -> None:
    """FORK_FIRST, then the other modules with the most tests first (as xdist's loadscope would order them: a long
    module taken last would leave the other worker idle), then LAST. Within a module, the tests that wait for a
    background job come after the others, which keep their order."""
    size: dict[str, int] = {}
    first: dict[str, int] = {}
    for i, item in enumerate(items):
        module = item.nodeid.split("::")[0]
        size[module] = size.get(module, 0) + 1
        first.setdefault(module, i)

    def key(item) -> tuple[int, int, int, bool]:
        module = item.nodeid.split("::")[0]
        part = 0 if module.startswith(FORK_FIRST) else 2 if module.startswith(LAST) else 1
        waits = item.get_closest_marker("background") is not None
        return part, -size[module] if part == 1 else 0, first[module], waits

    items.sort(key=key)


def pytest_configure(config):
    config.addinivalue_line("markers", "background(name): needs the named job of tests/background.py, which starts "
                            "once the session has collected the test and runs beside the suite")


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected: only the selected tests' jobs start
def pytest_collection_modifyitems(session, config, items):
    _order(items)
    if not config.option.collectonly:
        background.start([m.args[0] for item in items for m in item.iter_markers("background")])


def pytest_sessionfinish(session, exitstatus):
    background.stop()


@pytest.fixture
def listener():
    """The port of a TCP listener on 127.0.0.1 that the network layers must keep a sandboxed program from reaching."""
    import socket

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    yield srv.getsockname()[1]
    srv.close()
