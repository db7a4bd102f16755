"""The local executor: parallel trainings in worker processes, progress sent back over a queue; the processes stay warm
for the next search in the same process. Workers fork from this process's fork server, which imported the learners
once (bird/executors/preload.py), or are spawned, each importing them itself (train.start_method)."""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing as mp
import multiprocessing.context
import os
import queue
import sys
import threading
import types
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from bird.executors.jobs import assemble, call_learner, failed_result, prepare
from bird.learners.job import TrainJob
from bird.lifetime import watch_parent
from bird.types import TrainResult

__all__ = ["TrainPool", "default_workers", "drop_warm_workers"]

_progress_queue: Any = None


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def _init_worker(q: Any, env: dict[str, str], owner: int) -> None:
    """A new worker: it ends with its parent (the fork server it forked from, or the pool owner that spawned it), the
    progress queue, and the pool owner's environment as it is now (a forked worker would otherwise have its fork
    server's)."""
    global _progress_queue
    watch_parent(getattr(sys.modules.get(PRELOAD), "SERVER_PID", owner))
    _progress_queue = q
    for name in set(os.environ) - set(env):
        del os.environ[name]
    os.environ.update(env)
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def _progress(cid: str, steps: int, total: int, score: float | None) -> None:
    if _progress_queue is not None:
        _progress_queue.put((cid, steps, total, score))


def _run(learner: str, group: list[TrainJob]) -> list[TrainResult]:
    return call_learner(learner, group, _progress)


PRELOAD = "bird.executors.preload"
OWNER_VARIABLE = "BIRD_POOL_OWNER"  # the pid PRELOAD's server dies with, in its environment at start
# Variables the preloaded modules (torch) read when imported: a worker forked from a server that started with other
# values would not act on this process's, so such a change makes new workers spawn. (Not TORCHINDUCTOR_*: importing
# torch._dynamo sets TORCHINDUCTOR_CACHE_DIR in the importing process, and only a compile reads it.)
READ_AT_IMPORT = ("OMP_", "MKL_", "OPENBLAS_", "TORCH_", "PYTORCH_", "CUDA_")
_server_env: dict[str, str] | None = None  # the environment this process's fork server started with


def _forkable() -> bool:
    """Whether a worker forked from this process's fork server acts as a spawned one would: no variable of
    READ_AT_IMPORT changed since the server started. (It gets this process's sys.path, working directory and, at
    start, environment, as a spawned one does.)"""
    assert _server_env is not None
    changed = {k for k in set(_server_env) | set(os.environ) if _server_env.get(k) != os.environ.get(k)}
    return not any(k.startswith(READ_AT_IMPORT) for k in changed)


@contextlib.contextmanager
def _main_hidden() -> Iterator[None]:
    """While a worker starts: `__main__` is a bare module, so the worker is not told to run the parent's main script
    again (multiprocessing would, as `__mp_main__`). A worker needs nothing from it, and a launcher script without an
    `if __name__ == "__main__":` guard would otherwise start a search in every worker."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


class _SpawnProcess(mp.context.SpawnProcess):
    @staticmethod
    def _Popen(process_obj: Any) -> Any:
        with _main_hidden():
            return mp.context.SpawnProcess._Popen(process_obj)


class _SpawnContext(mp.context.SpawnContext):
    Process = _SpawnProcess


_CONTEXTS: dict[str, Any] = {"spawn": _SpawnContext()}
if "forkserver" in mp.get_all_start_methods():
    class _ForkServerProcess(mp.context.ForkServerProcess):
        @staticmethod
        def _Popen(process_obj: Any) -> Any:
            with _main_hidden():
                return mp.context.ForkServerProcess._Popen(process_obj)

    class _ForkServerContext(mp.context.ForkServerContext):
        Process = _ForkServerProcess

    _CONTEXTS["forkserver"] = _ForkServerContext()


def _context(start_method: str) -> Any:
    """The multiprocessing context for new workers: forkserver (this process's fork server, started at the first pool
    with PRELOAD imported) where it is available and `_forkable`, else spawn. Either starts workers that never import
    this process's `__main__` (_main_hidden)."""
    global _server_env
    if start_method != "forkserver" or "forkserver" not in _CONTEXTS:
        return _CONTEXTS["spawn"]
    from multiprocessing import forkserver

    with _warm_lock:
        if _server_env is None:
            forkserver.set_forkserver_preload([PRELOAD])
            _start_fork_server()
            _server_env = dict(os.environ)
        return _CONTEXTS["forkserver" if _forkable() else "spawn"]


def _start_fork_server() -> None:
    """Start this process's fork server from a thread that lives as long as this process: the server dies with the
    thread that started it (bird.lifetime.die_with_parent, in PRELOAD), its workers with the server."""
    from multiprocessing import forkserver

    outcome: list[BaseException | None] = []

    def own() -> None:
        os.environ[OWNER_VARIABLE] = str(os.getpid())
        try:
            forkserver.ensure_running()
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller
            outcome.append(exc)
        finally:
            os.environ.pop(OWNER_VARIABLE, None)
            started.set()
        threading.Event().wait()

    started = threading.Event()
    threading.Thread(target=own, name="bird-fork-server-owner", daemon=True).start()
    started.wait()
    if outcome[0] is not None:
        raise outcome[0]


class _Workers:
    """Worker processes and the queue their progress comes back on; `sink` receives that progress."""

    def __init__(self, workers: int, start_method: str) -> None:
        self.key = _spawn_key(workers, start_method)
        self.ctx = _context(start_method)
        self.queue = self.ctx.Queue()
        self.sink: Callable[[str, int, int, float | None], None] | None = None
        self.executor = ProcessPoolExecutor(workers, mp_context=self.ctx, initializer=_init_worker,
                                            initargs=(self.queue, dict(os.environ), os.getpid()))
        self._stop = threading.Event()
        self._drain = threading.Thread(target=self._drain_loop, daemon=True)
        self._drain.start()

    def _drain_loop(self) -> None:
        while not self._stop.is_set():
            try:
                msg = self.queue.get(timeout=0.2)
            except queue.Empty:
                continue
            except (EOFError, OSError):
                return
            if self.sink:
                self.sink(*msg)

    def renew(self) -> None:
        """A fresh set of processes in place of a broken one."""
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.executor = ProcessPoolExecutor(self.key[0], mp_context=self.ctx, initializer=_init_worker,
                                            initargs=(self.queue, dict(os.environ), os.getpid()))

    def shutdown(self) -> None:
        """Stop the processes without waiting for them to exit (their interpreters take a second or two)."""
        self.executor.shutdown(wait=False, cancel_futures=True)
        self._stop.set()
        self._drain.join(timeout=2)
        self.queue.close()


def _spawn_key(workers: int, start_method: str) -> tuple:
    """What a new worker inherits from this process: a warm one is reused only where a new one would be the same
    (worker count, start method, environment but pytest's per-test marker, sys.path, working directory)."""
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"))
    return workers, start_method, env, tuple(sys.path), os.getcwd()


_warm: _Workers | None = None  # the workers the last search in this process left, for the next one
_warm_lock = threading.Lock()


def _take_warm(workers: int, start_method: str) -> _Workers | None:
    global _warm
    with _warm_lock:
        found, _warm = _warm, None
    if found is not None and found.key == _spawn_key(workers, start_method):
        return found
    if found is not None:
        found.shutdown()
    return None


def _keep_warm(procs: _Workers) -> None:
    global _warm
    if mp.parent_process() is not None:  # a child (a joblib sweep's worker) joins its children before exiting
        procs.shutdown()
        return
    with _warm_lock:
        old, _warm = _warm, procs
    if old is not None:
        old.shutdown()


@atexit.register
def drop_warm_workers() -> None:
    """Stop the warm workers, if any: the next pool spawns afresh."""
    global _warm
    with _warm_lock:
        old, _warm = _warm, None
    if old is not None:
        old.shutdown()


class TrainPool:
    """A pool of `workers` processes (forked from the fork server, or spawned: `start_method`); `run(jobs)` returns
    results in job order.

    `close()` keeps the processes warm for the next pool this process makes with the same settings (the next search
    of a sweep run in one process, a notebook, the test suite): it starts without spawning and importing torch
    again. A pool whose processes broke, or a different setting, spawns afresh."""

    def __init__(self, workers: int, on_progress: Callable[[str, int, int, float | None], None] | None = None,
                 start_method: str = "forkserver") -> None:
        self.workers = workers
        if mp.get_start_method(allow_none=True) not in (None, *mp.get_all_start_methods()):
            # e.g. inside a joblib/loky sweep worker: spawned children could not restore "loky"
            mp.set_start_method("spawn", force=True)
        self._procs = _take_warm(workers, start_method) or _Workers(workers, start_method)
        self._procs.sink = on_progress
        self._healthy = True

    def run(self, learner: str, jobs: list[TrainJob]) -> list[TrainResult]:
        """Results in job order (groups and exported programs: bird.executors.jobs.prepare)."""
        groups, failed = prepare(learner, jobs)
        futures = [self._procs.executor.submit(_run, learner, group) for group in groups]
        done: list[TrainResult] = []
        broken = False
        self._healthy = False  # until every future has been collected
        for fut, group in zip(futures, groups, strict=True):
            try:
                done.extend(fut.result())
            except BrokenProcessPool as exc:
                broken = True
                done.extend(failed_result(job, f"training worker died: {exc}") for job in group)
            except Exception as exc:  # noqa: BLE001 - recorded as this candidate's failure
                done.extend(failed_result(job, f"{type(exc).__name__}: {exc}") for job in group)
        if broken:
            self._procs.renew()
        self._healthy = True
        return assemble(jobs, failed, done)

    def close(self) -> None:
        """Hand the processes on to the next pool (or stop them, when a run was interrupted mid-way)."""
        self._procs.sink = None
        if self._healthy:
            _keep_warm(self._procs)
        else:
            self._procs.shutdown()
