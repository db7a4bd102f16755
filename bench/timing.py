"""One smoke search timed end to end, shared by the bench scripts that compare ways of running it."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from bird.config.load import compose
from bird.loop import search


def timed_search(overrides: list[str]) -> tuple[float, dict]:
    """(wall seconds, result.json content) of one search in a temporary run directory."""
    with tempfile.TemporaryDirectory() as run_dir:
        start = time.perf_counter()
        result = search(compose(overrides), Path(run_dir))
        return time.perf_counter() - start, result
