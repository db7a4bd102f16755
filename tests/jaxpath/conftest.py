"""JAX path fixtures: one composed config with test-speed learner settings, reward programs exported once.

Every test here trains brax/inverted_pendulum with the same settings (TINY), so the training program compiles once per
session, beside the suite (warm_programs.py, a background job: tests/background.py), and every test loads it from
JAX's persistent cache: the tests that train wait for that job (`jax_cfg`)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # before jaxlib loads: see bird/jax_cache.py
try:
    import brax  # noqa: F401

    HAVE_JAX = True
except ImportError:
    if os.environ.get("BIRD_REQUIRE_JAX") == "1":  # `make test` sets it: CI runs these tests, never skips them
        raise ImportError("the [jax] extra is missing: `make test` installs it (pip install -e '.[jax]')") from None
    HAVE_JAX = False
# without the [jax] extra (a plain `pytest` in a venv without it) this folder is not collected
collect_ignore_glob = [] if HAVE_JAX else ["test_*.py"]


def pytest_report_header(config):
    return None if HAVE_JAX else "tests/jaxpath: not collected (the [jax] extra is not installed; make test installs it)"


# The session's compilation cache (BIRD_JAX_CACHE, set in tests/conftest.py) is shared with the pool's worker processes.
if HAVE_JAX:
    from bird.jax_cache import enable_compilation_cache

    enable_compilation_cache()  # before this process compiles anything, so its programs go to the cache too

from jax_programs import TINY  # noqa: E402


@pytest.fixture(scope="session")
def jax_programs_compiled() -> None:
    """Waits for the background job that compiles the training programs into the session's cache; if it failed, the
    tests compile what they need themselves (and show the failure, if it is theirs too)."""
    import warnings

    import background

    done = background.result("jax_programs")
    if done.returncode != 0:
        warnings.warn(f"the JAX warm-up exited {done.returncode}; the tests compile for themselves:\n"
                      f"{done.stderr[-3000:]}", stacklevel=1)


@pytest.fixture(scope="session")
def jax_cfg(compose_cfg, jax_programs_compiled):
    return compose_cfg(*TINY)


@pytest.fixture(scope="session")
def make_jobs(jax_cfg, tmp_path_factory):
    """make_jobs([(code or None, seed), ...], env_steps) -> jobs with exported programs (as the pool sends them)."""
    from bird.learners.job import make_job
    from bird.learners.programs import export_jobs

    def _make(specs, env_steps=None, **changes):
        out = tmp_path_factory.mktemp("jax_jobs")
        jobs = [make_job(jax_cfg, f"c{i}", code, seed, env_steps or jax_cfg.budget.env_steps, out / f"c{i}")
                for i, (code, seed) in enumerate(specs)]
        jobs, failed = export_jobs(jobs)
        assert not failed, failed
        from dataclasses import replace

        return [replace(j, **changes) for j in jobs]

    return _make
