"""train.executor: one interface for the local pool and Ray; clear errors for unknown or uninstalled executors."""

from __future__ import annotations

import importlib.util

import pytest

from bird.config.load import ConfigError
from bird.executors import make_executor
from bird.learners.job import make_job


def test_an_unknown_executor_is_rejected_naming_the_allowed_ones(compose_cfg):
    with pytest.raises(ConfigError, match=r"train.executor='slurm': not a registered executor; allowed: \['local', 'ray'\]"):
        compose_cfg("train.executor=slurm")


def test_the_ray_executor_without_ray_installed_says_how_to_install_it(compose_cfg, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    with pytest.raises(ConfigError, match=r"needs the 'ray' package: pip install 'bird-ird\[cluster\]'"):
        compose_cfg("train.executor=ray")
    with pytest.raises(ConfigError, match="num_cpus must be > 0"):
        compose_cfg("train.resources.num_cpus=0")


def test_the_local_pool_returns_results_in_job_order_and_failures_as_data(compose_cfg, tmp_path):
    cfg = compose_cfg("env=mujoco/inverted_pendulum")
    executor = make_executor(cfg, 2)
    try:
        results = executor.run("no_such_learner", [make_job(cfg, f"c{i}", None, i, 512, tmp_path / str(i))
                                                   for i in range(3)])
    finally:
        executor.close()
    assert [r.candidate_id for r in results] == ["c0", "c1", "c2"]
    assert all(r.failure.kind == "train_error" and "unknown learner 'no_such_learner'" in r.failure.reason
               for r in results)


def test_the_local_pool_runs_cores_over_cpus_per_training_at_once(compose_cfg, monkeypatch):
    import bird.loop

    monkeypatch.setattr(bird.loop, "default_workers", lambda: 8)
    assert bird.loop.make_plan(compose_cfg("budget.max_candidates=8", "train.resources.num_cpus=2")).workers == 4
    assert bird.loop.make_plan(compose_cfg("budget.max_candidates=8", "train.resources.num_cpus=16")).workers == 1
    assert bird.loop.make_plan(compose_cfg("budget.max_candidates=3")).workers == 3
    assert bird.loop.make_plan(compose_cfg("train.workers=5", "train.resources.num_cpus=8")).workers == 5


def _worker_pids(pool) -> set[int]:
    import os

    return {pool._procs.executor.submit(os.getpid).result() for _ in range(4)}


def test_the_next_pool_with_the_same_settings_reuses_the_warm_workers_and_a_changed_setting_spawns_afresh(monkeypatch):
    from bird.executors.local import TrainPool

    first = TrainPool(1)
    pids = _worker_pids(first)
    first.close()
    second = TrainPool(1)  # what the next search of a sweep in this process makes
    assert _worker_pids(second) == pids
    second.close()
    monkeypatch.setenv("BIRD_TEST_SPAWN_KEY", "changed")  # a worker spawned now would see it: not the warm one
    third = TrainPool(1)
    third_pids = _worker_pids(third)
    assert third_pids.isdisjoint(pids)
    third._healthy = False  # as after a run interrupted mid-way: its workers are stopped, not handed on
    third.close()
    fourth = TrainPool(1)
    assert _worker_pids(fourth).isdisjoint(pids | third_pids)
    fourth.close()


def _worker_view(names: tuple[str, ...]) -> tuple[int, dict[str, str | None], bool]:
    """In a pool worker: its parent, the named environment variables, whether torch._dynamo was already imported."""
    import os
    import sys

    return os.getppid(), {n: os.environ.get(n) for n in names}, "torch._dynamo" in sys.modules


def test_workers_fork_from_a_server_that_imported_the_learners_and_see_this_processs_environment(monkeypatch):
    import os
    from multiprocessing import forkserver

    from bird.executors import local
    from bird.executors.local import TrainPool, drop_warm_workers

    def view(names: tuple[str, ...], **kw):
        pool = TrainPool(1, **kw)
        try:
            return pool._procs.executor.submit(_worker_view, names).result()
        finally:
            pool.close()
            drop_warm_workers()

    names = ("BIRD_TEST_FORK_ENV", "OMP_NUM_THREADS")
    drop_warm_workers()
    parent, env, preloaded = view(names)  # train.start_method's default: forkserver
    server = forkserver._forkserver._forkserver_pid
    started = local._server_env or {}
    changed = {k for k in set(started) | set(os.environ) if started.get(k) != os.environ.get(k)}
    assert parent == server != os.getpid() and preloaded and env == {names[0]: None, names[1]: "1"}, changed
    import torch._dynamo  # noqa: F401  (sets TORCHINDUCTOR_CACHE_DIR here, as the first training in a process does)

    monkeypatch.setenv(names[0], "set after the server started")  # read when used: a forked worker gets it at start
    assert view(names) == (server, {names[0]: "set after the server started", names[1]: "1"}, True)
    monkeypatch.setenv(names[1], "2")  # torch reads it when imported: the server's torch would not act on it
    assert view(names) == (os.getpid(), {names[0]: "set after the server started", names[1]: "2"}, False)
    monkeypatch.setenv(names[1], "1")
    assert view(names, start_method="spawn") == (os.getpid(), {names[0]: "set after the server started",
                                                                names[1]: "1"}, False)  # the baseline


def test_an_unknown_start_method_is_rejected_naming_the_allowed_ones(compose_cfg):
    with pytest.raises(ConfigError, match=r"train.start_method='fork': expected one of \['forkserver', 'spawn'\]"):
        compose_cfg("train.start_method=fork")


def _dumpable() -> int:
    """In a pool worker: prctl(PR_GET_DUMPABLE)."""
    import ctypes

    return ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)


def test_the_fork_server_and_its_workers_are_not_dumpable():
    """They hold the pool owner's environment (API keys): a same-user process must not read it from /proc. A worker
    is non-dumpable from its start only if the server it forked from was (the flag is inherited, and a spawned worker
    starts dumpable)."""
    from bird.executors.local import TrainPool, drop_warm_workers

    drop_warm_workers()
    pool = TrainPool(1)
    try:
        assert pool._procs.executor.submit(_dumpable).result() == 0
    finally:
        pool.close()
        drop_warm_workers()
