"""No orphans: a search killed with SIGKILL takes its fork server, resource tracker, training workers and their reward
workers with it (bird/lifetime.py); the JAX trainer's case is tests/jaxpath/test_jax_orphans.py."""

from __future__ import annotations

import pytest
from process_tree import cmdline, describe, kill_search_when, name

SEARCH = ["budget=smoke", "video.record=none", "env=mujoco/inverted_pendulum", "run.progress=false"]
POOL = ("multiprocessing.forkserver", "multiprocessing.spawn")  # the fork server and its workers, or spawned workers


def _training(procs) -> bool:
    """The resource tracker, a pool process and a reward worker of a training (training under way)."""
    return any(any(p in cmdline(q) for p in POOL) for q in procs) and \
        any("resource_tracker" in cmdline(p) for p in procs) and any(name(p) == "bird-worker" for p in procs)


@pytest.mark.slow
@pytest.mark.parametrize("start_method", ["forkserver", "spawn"])
def test_a_search_killed_with_sigkill_leaves_no_process_of_its_local_pool_alive(tmp_path, start_method):
    seen, left = kill_search_when([*SEARCH, f"train.start_method={start_method}"], tmp_path / "run", _training)
    assert any(f"multiprocessing.{start_method}" in d for d in seen.values()), seen  # the pool was there
    assert not left, "alive 10 s after the search was killed:\n" + "\n".join(describe(p) for p in left)
