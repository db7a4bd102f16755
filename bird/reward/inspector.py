"""Artefact inspection in a throwaway isolated process: before any trainer loads an exported reward program, a
fresh process behind the reward worker's layers deserialises it, runs every check (bird/reward/artefacts.py) and
compiles it for the CPU as the trainer would (jax's lowering of the call, shape refinement, XLA), under a wall-clock
limit, answers once, and is killed. A crafted artefact that crashes or hangs jax's deserialiser, the MLIR reader or
the compiler costs only this process: the candidate gets a recorded failure.

Host side: `inspect_artefact`. Process side: `main` (started by sandbox.WorkerProcess as the entry module).
"""

from __future__ import annotations

import os
from typing import Any

from bird.reward import isolation, replies
from bird.reward.artefacts import MAX_ARTEFACT_BYTES
from bird.reward.languages import JAX
from bird.types import Failure, FailureKind

__all__ = ["inspect_artefact", "main", "INSPECT_TIMEOUT_S", "INSPECT_MEMORY_MB"]

INSPECT_TIMEOUT_S = 60.0  # deserialise + parse + walk one artefact of at most 16 MiB (measured: well under 5 s)
INSPECT_MEMORY_MB = 2048
_MAX_TASKS = 64  # the MLIR thread pool
_MODULES = ("numpy", "flatbuffers", "jaxlib", "jax", "ml_dtypes")
_PRELOAD = ("jax.export", "jax._src.export.serialization", "jax._src.export.serialization_generated",
            "jax._src.interpreters.mlir", "jaxlib.mlir.ir", "bird.reward.artefacts", "bird.reward.worker")
_KINDS = frozenset({"rejected", "bad_output", "timeout", "runtime_error"})


def _config(timeout_s: float) -> isolation.IsolationConfig:
    return isolation.IsolationConfig(memory_mb=INSPECT_MEMORY_MB, call_timeout_s=timeout_s, host_pid=os.getpid(),
                                     threads=True, read_modules=_MODULES, preload=_PRELOAD, max_tasks=_MAX_TASKS,
                                     extra_read_paths=JAX.extra_read_paths)


def inspect_artefact(prog: Any, timeout_s: float = INSPECT_TIMEOUT_S) -> Failure | None:
    """None when `prog` (an ExportedReward) passes every check in a fresh isolated process within `timeout_s`;
    else the Failure to record for its candidate (the process is killed either way)."""
    from bird.reward.sandbox import WorkerProcess

    cfg = _config(timeout_s)
    what, limit = "artefact inspection", f"inspection time limit ({timeout_s:g} s, wall clock)"
    try:
        worker = WorkerProcess(None, cfg.memory_mb, timeout_s, module="bird.reward.inspector",
                               init={"isolation": cfg.to_json()}, env=_ENV, name="artefact inspector")
    except replies.RewardProgramError as exc:
        return Failure(FailureKind.TRAIN_ERROR, f"the artefact inspector did not start: {exc.failure.reason}")
    try:
        reply, _ = worker.request({"op": "inspect", "obs_dim": prog.obs_dim, "act_dim": prog.act_dim,
                                   "components": len(prog.components), "rows": prog.rows}, bytes(prog.hlo),
                                  timeout_s, 0, what, limit)
    except replies.RewardProgramError as exc:
        failure = exc.failure
        return Failure(failure.kind, f"{failure.reason} (artefact {prog.digest})", failure.detail)
    finally:
        worker.close()
    if replies.is_ok(reply):
        return None
    failure = replies.failure_from(reply, _KINDS)
    return Failure(failure.kind, f"{failure.reason} (artefact {prog.digest})", failure.detail)


_ENV = {**JAX.env, "TF_CPP_MIN_LOG_LEVEL": "3"}  # one BLAS thread: numpy's would start before Landlock


# -- the inspecting process -----------------------------------------------------------------------------------
def main(result_fd: int) -> None:
    from bird.reward.worker import start_configured

    session, cfg = start_configured(result_fd)
    header, payload = session.recv()
    try:
        reply = _inspect(header, payload)
    except Exception as exc:  # noqa: BLE001 - whatever the artefact makes the checks raise is its failure
        reply = {"ok": False, "kind": "bad_output", "reason": f"the artefact broke the inspection: "
                                                              f"{type(exc).__name__}: {str(exc)[:300]}"}
    session.send(reply)


def _inspect(header: dict[str, Any], payload: bytes) -> dict[str, Any]:
    import jax
    from jax import export

    from bird.reward.artefacts import ArtefactError, Expected, check_metadata, check_module

    want = Expected(int(header["obs_dim"]), int(header["act_dim"]), int(header["components"]), int(header["rows"]))
    if len(payload) > MAX_ARTEFACT_BYTES:
        return {"ok": False, "kind": "bad_output", "reason": "the artefact is larger than 16 MiB"}
    try:
        if "cpu" not in check_metadata(payload, want):
            raise ArtefactError("bad_output", "the artefact has no CPU lowering, which the inspector compiles")
        exp = export.deserialize(bytearray(payload))
        ops = check_module(exp, want)
    except ArtefactError as exc:
        return {"ok": False, "kind": exc.kind, "reason": exc.reason[:500]}
    try:  # the trainer's own path: jax's lowering of the call, shape refinement, XLA's compiler
        jax.jit(exp.call).lower(*[jax.ShapeDtypeStruct(s, "float32") for s in want.inputs]).compile()
    except Exception as exc:  # noqa: BLE001 - a module XLA cannot compile is this artefact's failure
        return {"ok": False, "kind": "runtime_error", "reason": f"the artefact does not compile: "
                                                                f"{type(exc).__name__}: {str(exc)[:300]}"}
    return {"ok": True, "ops": sum(ops.values())}
