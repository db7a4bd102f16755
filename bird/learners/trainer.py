"""The isolated JAX trainer process (host side: bird/learners/trainer_host.py).

Started as a WorkerProcess entry module, with the environment the host built (no secrets) and an empty working
directory. It applies the reward worker's layers to itself (bird/reward/isolation.py, with the trainer's profile:
threads, the GPU's device nodes, the task limit; a root trainer keeps uid 0 inside the other layers until its
trusted code is loaded), then answers one request per phase. Every reply goes on the result pipe, framed; the host
validates all of it.

  init {isolation}              -> {ok, layers}
  explain (instead of setup)    -> {ok, layers}                          the deferred uid drop, then exit
  setup {width} + pickled jobs  -> {ok, rows, settings, timing, layers}  trusted: task, settings, compiled program;
                                   then the deferred uid drop. No reward program has arrived yet.
  load {programs} + artefacts   -> {ok, failures, live}                  each artefact checked and compiled alone
  train                         -> {event: update}* {event: checkpoint}* {event: trained, failures, updates, timing}
  outputs                       -> {event: output, job, policy, arrays} + bytes, ..., {event: done}
A failure of the shared step after `load` is {ok: false, group: true}: the host finds the culprit.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import sys
import traceback
from typing import Any

from bird.reward import isolation
from bird.reward.worker import Session, start_configured

__all__ = ["main", "compile_main", "encode_arrays"]


def _failure(kind: str, exc: BaseException | str, group: bool = False) -> dict[str, Any]:
    text = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    detail = "" if isinstance(exc, str) else "".join(traceback.format_exception(exc))[-3000:]
    return {"ok": False, "kind": kind, "reason": text[:500], "detail": detail, "group": group}


def encode_arrays(arrays: dict[str, Any]) -> tuple[list[list[Any]], bytes]:
    """[[name, dtype, shape], ...] and the arrays' little-endian bytes, concatenated (float64 and int64 only)."""
    import numpy as np

    spec, chunks = [], []
    for name, value in arrays.items():
        a = np.asarray(value)
        a = a.astype("<i8") if a.dtype.kind in "iub" else a.astype("<f8")
        spec.append([name, a.dtype.str, list(a.shape)])
        chunks.append(np.ascontiguousarray(a).tobytes())
    return spec, b"".join(chunks)


def _setup(session: Session, cfg: isolation.IsolationConfig, header: dict[str, Any], payload: bytes) -> Any:
    from bird.jax_cache import enable_compilation_cache
    from bird.learners.jax_ppo import GroupTraining

    jobs, executables = pickle.loads(payload)  # noqa: S301 - from the host (trusted), never from a program
    enable_compilation_cache()  # read-only here; the training program arrives compiled (jax_executables.py)
    import jax

    jax.config.update("jax_include_full_tracebacks_in_locations", False)
    run = GroupTraining(jobs, int(header["width"]), executables)  # the compile step's executables, when it ran
    layers = []
    if cfg.defer_uid_drop and os.geteuid() == 0:
        layers.append(isolation.drop_identity(cfg).to_json())
    session.send({"ok": True, "rows": run.rows, "settings": run.settings.to_json(), "timing": run.timing,
                  "layers": layers, "devices": [str(d) for d in jax.devices()][:16]})
    return run


def _load(session: Session, run: Any, header: dict[str, Any], payload: bytes) -> bool:
    from bird.learners.jax_ppo import GroupError
    from bird.reward.jax_export import ExportedReward

    programs, at = [], 0
    for meta in header["programs"]:
        if meta is None:
            programs.append(None)
            continue
        size = int(meta["size"])
        programs.append(ExportedReward(payload[at:at + size], tuple(meta["components"]), int(meta["obs_dim"]),
                                       int(meta["act_dim"]), int(meta["rows"])))
        at += size
    try:
        failures = run.load(programs)
    except GroupError as exc:
        session.send(_failure("runtime_error", str(exc), group=True))
        return False
    session.send({"ok": True, "failures": {str(i): f.to_json() for i, f in failures.items()}, "live": run.live})
    return bool(run.live)


def _train(session: Session, run: Any) -> bool:
    from bird.learners.jax_ppo import GroupError

    def checkpoint(i: int, c: Any) -> None:
        session.send({"event": "checkpoint", "job": i, "checkpoint": dataclasses.asdict(c)})

    try:
        run.train(on_update=lambda u: session.send({"event": "update", "update": u}), on_checkpoint=checkpoint)
    except GroupError as exc:
        session.send({**_failure("runtime_error", str(exc), group=True), "event": "error"})
        return False
    shipped = run.ship()  # train.checkpoint_selection: the chosen checkpoint's parameters back in their slots
    session.send({"event": "trained", "failures": {str(i): f.to_json() for i, f in run.failures.items()},
                  "updates": run.updates, "timing": run.timing, "shipped": {str(i): k for i, k in shipped.items()}})
    return True


def _outputs(session: Session, run: Any) -> None:
    rollouts = run.rollouts()
    for i in run.trained():
        policy = run.policy(i) if run.jobs[i].save_policy else b""
        spec, data = encode_arrays(rollouts[i]) if i in rollouts else ([], b"")
        session.send({"event": "output", "job": i, "policy": len(policy), "arrays": spec}, policy + data)
    session.send({"event": "done"})


def main(result_fd: int) -> None:
    session, cfg = start_configured(result_fd)
    header, payload = session.recv()
    if header.get("op") == "explain":  # python -m bird.reward check --explain: the layers, the uid drop, nothing more
        drop = [isolation.drop_identity(cfg).to_json()] if cfg.defer_uid_drop and os.geteuid() == 0 else []
        session.send({"ok": True, "layers": drop})
        return
    try:
        run = _setup(session, cfg, header, payload)
    except Exception as exc:  # noqa: BLE001 - trusted phase: the host records it for every job, no culprit search
        session.send(_failure("train_error", exc))
        return
    steps = [(_load, True), (_train, False), (_outputs, False)]
    for step, takes_payload in steps:
        header, payload = session.recv()
        args = (header, payload) if takes_payload else ()
        try:
            if step(session, run, *args) is False:
                return
        except Exception as exc:  # noqa: BLE001 - after the artefacts arrived: which one is to blame is not known
            session.send({**_failure("runtime_error", exc, group=True), "event": "error"})
            return


def compile_main(host_pid: int) -> None:
    """The host's compile step (no reward program involved): build and compile the training program for the pickled
    (jobs, width) on stdin and write its executables to stdout (`GroupTraining.serialized_program`): the isolated
    trainer loads them instead of tracing the program again. Exit status 0 on success. It dies with `host_pid`."""
    from bird.lifetime import die_with_parent

    die_with_parent(host_pid)
    from bird.jax_cache import without_persistent_cache
    from bird.learners.jax_executables import Executables, store_dir
    from bird.learners.jax_ppo import GroupTraining

    without_persistent_cache()  # its executables are kept in the store instead (bird/learners/jax_executables.py)

    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what the libraries print goes to stderr: stdout carries the executables only
    jobs, width = pickle.loads(sys.stdin.buffer.read())  # noqa: S301 - from the host
    keep = Executables(store_dir())  # not JAX's persistent cache (bird/learners/jax_executables.py)
    out.write(GroupTraining(jobs, width, keep=keep).serialized_program(keep))
    out.close()
