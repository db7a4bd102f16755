"""Trainings as Ray tasks, on a local Ray or a cluster. Each task streams its progress, then its result."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import ray
from ray import exceptions as ray_errors

from bird.config.schema import RayConfig, ResourcesConfig
from bird.executors.jobs import OnProgress, assemble, call_learner, failed_result, prepare
from bird.learners.job import TrainJob
from bird.types import TrainResult

__all__ = ["RayExecutor", "start_ray"]


def start_ray(cfg: RayConfig) -> bool:
    """Attach to `ray.address`, or start a local Ray; True when this call started or attached it."""
    if ray.is_initialized():  # e.g. inside a Hydra Ray-launcher job, or a test session's Ray
        return False
    kwargs: dict[str, Any] = {"address": cfg.address, "log_to_driver": True}
    if cfg.address is None:
        kwargs["include_dashboard"] = cfg.include_dashboard
        if cfg.num_cpus is not None:
            kwargs["num_cpus"] = cfg.num_cpus
        if cfg.object_store_mb is not None:
            kwargs["object_store_memory"] = cfg.object_store_mb * 2**20
    ray.init(**kwargs)
    return True


def _train_stream(learner: str, group: list[TrainJob]) -> Iterator[tuple[str, Any]]:
    """Ray task body: run the learner on one group in a thread; yield ("progress", msg)... then ("result", results)."""
    messages: queue.SimpleQueue = queue.SimpleQueue()
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["result"] = call_learner(learner, group, lambda *msg: messages.put(msg))
        except BaseException as exc:  # noqa: BLE001 - re-raised in the task below
            outcome["error"] = exc
        finally:
            messages.put(None)

    worker = threading.Thread(target=work, name=f"train-{group[0].candidate_id}", daemon=True)
    worker.start()
    while (msg := messages.get()) is not None:
        yield "progress", msg
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    yield "result", outcome["result"]


def _reason(exc: BaseException) -> str:
    """A failure reason for a task that did not return: the learner's own error, or how Ray lost the worker."""
    if isinstance(exc, ray_errors.RayTaskError):
        cause = exc.cause if exc.cause is not None else exc
        return f"{type(cause).__name__}: {str(cause).strip().splitlines()[-1] if str(cause).strip() else ''}"
    if isinstance(exc, ray_errors.RayError):
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        return f"Ray training worker lost ({type(exc).__name__}): {first}"
    return f"{type(exc).__name__}: {exc}"


class RayExecutor:
    """Submits every job at once as a Ray task reserving `resources`; Ray schedules them on free cores."""

    def __init__(self, cfg: RayConfig, resources: ResourcesConfig, on_progress: OnProgress | None = None) -> None:
        self.started = start_ray(cfg)
        self._on_progress = on_progress
        self._lock = threading.Lock()
        self._task = ray.remote(_train_stream).options(
            num_cpus=resources.num_cpus, num_gpus=resources.num_gpus, max_retries=0, num_returns="streaming")

    def _consume(self, stream: Any, group: list[TrainJob]) -> list[TrainResult]:
        result: list[TrainResult] | None = None
        try:
            for ref in stream:
                kind, payload = ray.get(ref)
                if kind == "result":
                    result = payload
                elif self._on_progress is not None:
                    with self._lock:
                        self._on_progress(*payload)
        except Exception as exc:  # noqa: BLE001 - recorded as this candidate's failure
            return [failed_result(job, _reason(exc)) for job in group]
        if result is None:
            return [failed_result(job, "Ray training task ended without a result") for job in group]
        return result

    def run(self, learner: str, jobs: list[TrainJob]) -> list[TrainResult]:
        groups, failed = prepare(learner, jobs)
        if not groups:
            return assemble(jobs, failed, [])
        streams = [self._task.remote(learner, group) for group in groups]
        with ThreadPoolExecutor(max_workers=len(groups), thread_name_prefix="ray-train") as pool:
            done = [r for results in pool.map(self._consume, streams, groups) for r in results]
        return assemble(jobs, failed, done)

    def close(self) -> None:
        if self.started:
            ray.shutdown()
            self.started = False
