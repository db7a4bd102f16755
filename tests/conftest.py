"""Shared fixtures: composed configs with test-speed overrides, a tiny custom generator for failure tests."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("OMP_NUM_THREADS", "1")

SMOKE = ["budget=smoke", "run.progress=false"]


@pytest.fixture(scope="session")
def compose_cfg():
    from bird.config.load import compose

    def _compose(*overrides: str):
        return compose([*SMOKE, *overrides])

    return _compose
