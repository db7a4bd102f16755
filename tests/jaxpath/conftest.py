"""JAX path fixtures: one composed config with test-speed learner settings, reward programs exported once.

Every test here trains brax/hopper with the same settings, so the compiled training program is built once per
session (and loaded from JAX's persistent cache by the pool's worker process)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # before jaxlib loads: see bird/learners/jax_cache.py
pytest.importorskip("brax")

from jax_programs import TINY  # noqa: E402


@pytest.fixture(scope="session")
def jax_cfg(compose_cfg):
    return compose_cfg(*TINY)


@pytest.fixture(scope="session")
def make_jobs(jax_cfg, tmp_path_factory):
    """make_jobs([(code or None, seed), ...], env_steps) -> jobs with exported programs (as the pool sends them)."""
    from bird.learners.programs import export_jobs
    from bird.stages.train import make_job

    def _make(specs, env_steps=None, **changes):
        out = tmp_path_factory.mktemp("jax_jobs")
        jobs = [make_job(jax_cfg, f"c{i}", code, seed, env_steps or jax_cfg.budget.env_steps, out / f"c{i}")
                for i, (code, seed) in enumerate(specs)]
        jobs, failed = export_jobs(jobs)
        assert not failed, failed
        from dataclasses import replace

        return [replace(j, **changes) for j in jobs]

    return _make
