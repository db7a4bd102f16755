"""Helpers of the reward-sandbox unit tests (forked.py) and of the security tests (users.py) on sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent / "security")]
