"""Helpers of the reward-sandbox unit tests (forked.py) and of the security tests (users.py) on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "security")]


@pytest.fixture(scope="session")
def test_user() -> tuple[int, int]:
    """(uid, gid) of the unprivileged test user (security/users.py), made once; skipped where it cannot be."""
    from users import ensure_user

    made = ensure_user()
    if isinstance(made, str):
        pytest.skip(made)
    return made
