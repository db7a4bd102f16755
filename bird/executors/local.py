"""The local executor: parallel trainings in worker processes (spawn), progress sent back over a queue."""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from bird.executors.jobs import assemble, call_learner, failed_result, prepare
from bird.learners.job import TrainJob
from bird.types import TrainResult

__all__ = ["TrainPool", "default_workers"]

_progress_queue: Any = None


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def _init_worker(q: Any) -> None:
    global _progress_queue
    _progress_queue = q
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def _progress(cid: str, steps: int, total: int, score: float | None) -> None:
    if _progress_queue is not None:
        _progress_queue.put((cid, steps, total, score))


def _run(learner: str, group: list[TrainJob]) -> list[TrainResult]:
    return call_learner(learner, group, _progress)


class TrainPool:
    """A reusable pool of `workers` processes; `run(jobs)` returns results in job order."""

    def __init__(self, workers: int, on_progress: Callable[[str, int, int, float | None], None] | None = None) -> None:
        self.workers = workers
        if mp.get_start_method(allow_none=True) not in (None, *mp.get_all_start_methods()):
            # e.g. inside a joblib/loky sweep worker: spawned children could not restore "loky"
            mp.set_start_method("spawn", force=True)
        self._ctx = mp.get_context("spawn")
        self._queue = self._ctx.Queue()
        self._on_progress = on_progress
        self._executor = self._new_executor()
        self._stop = threading.Event()
        self._drain = threading.Thread(target=self._drain_loop, daemon=True)
        self._drain.start()

    def _new_executor(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(self.workers, mp_context=self._ctx, initializer=_init_worker, initargs=(self._queue,))

    def _drain_loop(self) -> None:
        while not self._stop.is_set():
            try:
                msg = self._queue.get(timeout=0.2)
            except queue.Empty:
                continue
            except (EOFError, OSError):
                return
            if self._on_progress:
                self._on_progress(*msg)

    def run(self, learner: str, jobs: list[TrainJob]) -> list[TrainResult]:
        """Results in job order (groups and exported programs: bird.executors.jobs.prepare)."""
        groups, failed = prepare(learner, jobs)
        futures = [self._executor.submit(_run, learner, group) for group in groups]
        done: list[TrainResult] = []
        broken = False
        for fut, group in zip(futures, groups, strict=True):
            try:
                done.extend(fut.result())
            except BrokenProcessPool as exc:
                broken = True
                done.extend(failed_result(job, f"training worker died: {exc}") for job in group)
            except Exception as exc:  # noqa: BLE001 - recorded as this candidate's failure
                done.extend(failed_result(job, f"{type(exc).__name__}: {exc}") for job in group)
        if broken:
            self._executor.shutdown(cancel_futures=True)
            self._executor = self._new_executor()
        return assemble(jobs, failed, done)

    def close(self) -> None:
        self._executor.shutdown(cancel_futures=True)
        self._stop.set()
        self._drain.join(timeout=2)
        self._queue.close()
