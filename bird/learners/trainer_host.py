"""Host side of the isolated JAX trainer (train.learner=jax_ppo): the trainer's wall, its watchdog, and the reading
of everything it sends back.

One group of jobs (bird/learners/jax_ppo.py `group_key`) is trained by one fresh trainer process
(bird/learners/trainer.py) behind the reward worker's layers with the trainer's profile (`trainer_isolation`).
Before it, a compile step (trusted code and input only, as this user) compiles the training program once per process
and shape; the trainer loads its executables (bird/learners/jax_executables.py). Every phase has a wall-clock
deadline; when one passes, the trainer's process group is killed and the failure is recorded with the limit that
fired. Curves, statistics, policies and rollouts arrive as framed messages and are validated here before anything is
written (bird/learners/jax_outputs.py). A shared step that fails after the reward programs arrived has no known
culprit: culprits.py retrains subsets.
"""

from __future__ import annotations

import json
import logging
import math
import os
import pickle
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from bird.jax_cache import cache_dir
from bird.learners.jax_executables import StoredPrograms, store_dir
from bird.learners.jax_outputs import choose_checkpoint, write_result
from bird.learners.job import TrainJob
from bird.learners.trainer_replies import job_failures, read_checkpoint, read_outputs, read_timing
from bird.reward import isolation, replies, trainer_wall
from bird.reward.protocol import clean_text
from bird.reward.sandbox import BOOT, WorkerProcess, worker_paths
from bird.types import Checkpoint, Failure, FailureKind, TrainResult

__all__ = ["Attempt", "run_trainer", "trainer_isolation", "TRAINER_LAYERS"]

log = logging.getLogger(__name__)
Progress = Callable[[str, int, int, float | None], None]
STARTUP_S = 120.0  # interpreter and layers (trusted)
LOAD_S = 600.0  # check, deserialise and compile every artefact of the group
OUTPUTS_S = 600.0  # rollouts (the programs run again) and policies
TIMEOUT_GRACE_S = 60.0  # past train.timeout_s, the trainer's own check has had its chance
MAX_OUTPUT_BYTES = 1 << 30  # policies and rollouts of a whole group
TRAINER_LAYERS = isolation.LAYERS
_COMPILED: dict[str, bytes] = {}  # the executables of this process's compile steps, per shape
_warned: set[tuple[str, ...]] = set()


def isolation_report(layers: list[dict[str, Any]]) -> None:
    """Log once per process and set of inactive layers (the trainer's report is complete after its uid drop)."""
    inactive = tuple(d["name"] for d in layers if not d["active"])
    if inactive and inactive not in _warned:
        _warned.add(inactive)
        log.warning("the JAX trainer runs without these OS layers: %s (python -m bird.reward check --explain)",
                    ", ".join(inactive))


def trainer_isolation(job: TrainJob) -> tuple[isolation.IsolationConfig, dict[str, str]]:
    """The trainer's layers and environment for this job's group (bird/reward/trainer_wall.py)."""
    return trainer_wall.trainer_isolation(job.train.jax.trainer_memory_mb, cache_dir())


# -- the compile step ---------------------------------------------------------------------------------------------
def _compile_key(jobs: list[TrainJob], width: int) -> str:
    """What decides the group's training program: its task, settings, budget and width (not the trainer's limits)."""
    j = jobs[0]
    settings = replace(j.train.jax, trainer_memory_mb=0, compile_timeout_s=0.0, update_timeout_s=0.0)
    return repr((j.env, settings, j.train.normalize_reward, j.env_steps, j.eval_episodes, width))


def ensure_compiled(jobs: list[TrainJob], width: int, timeout_s: float) -> Failure | bytes | None:
    """Compile the group's training program in a subprocess as this user (trusted code and input only), once per
    shape, through the executables store; returns the executables, which the trainer loads instead of tracing the
    program again. A shape another process compiled is read from the store (StoredPrograms). Skipped when the cache
    is off (None): the trainer then compiles alone."""
    key = _compile_key(jobs, width)
    if cache_dir() is None or key in _COMPILED:
        return _COMPILED.get(key)
    wall, env = trainer_isolation(jobs[0])
    stored = StoredPrograms(store_dir(), {"PATH": os.defpath, **env}, wall.devices)  # a GPU's program is not a CPU's
    found = stored.get(key)
    if found is not None:
        _COMPILED[key] = found
        return found
    code = BOOT.replace("main(int(sys.argv[1]))", "compile_main(int(sys.argv[1]))")  # the trainer's start, no wall
    try:
        proc = subprocess.run([sys.executable, "-I", "-c", code, str(os.getpid()), json.dumps(worker_paths()),
                               trainer_wall.TRAINER_MODULE], input=pickle.dumps((jobs, width)),
                              capture_output=True, timeout=timeout_s, env={"PATH": os.defpath, **env})
    except subprocess.TimeoutExpired:
        return Failure(FailureKind.TIMEOUT, f"compiling the training program exceeded train.jax.compile_timeout_s="
                                            f"{timeout_s:g}")
    if proc.returncode != 0:
        tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        return Failure(FailureKind.TRAIN_ERROR, f"compiling the training program failed: {tail[0][:400]}")
    _COMPILED[key] = proc.stdout
    stored.put(key, proc.stdout)
    return proc.stdout


# -- one trainer run ----------------------------------------------------------------------------------------------
@dataclass
class Attempt:
    """One trainer process's outcome: a result per job, or the group's failure. `blame` says the failure came after
    the artefacts were sent (one of them may have caused it); before that, no program was involved."""

    results: list[TrainResult] = field(default_factory=list)
    group: Failure | None = None
    blame: bool = False
    seconds: dict[str, float] = field(default_factory=dict)
    layers: list[dict[str, Any]] = field(default_factory=list)  # the trainer's, as it reported them


class _Run:
    """The host's view of one trainer: requests, deadlines, validated replies."""

    def __init__(self, jobs: list[TrainJob], width: int, progress: Progress | None, executables: bytes | None) \
            -> None:
        self.jobs, self.width, self.progress, self.executables = jobs, width, progress, executables
        self.curves: dict[int, list[Checkpoint]] = {i: [] for i in range(len(jobs))}
        self.failures: dict[int, Failure] = {}
        self.live: list[int] = []
        self.updates = 0
        self.summary: dict[str, Any] = {}
        self.steps_per_update = 0
        self.start = time.monotonic()
        self.outputs: dict[int, tuple[bytes | None, dict[str, np.ndarray] | None]] = {}
        self.seconds: dict[str, float] = {}
        self.blame = False
        cfg, env = trainer_isolation(jobs[0])
        t = time.monotonic()
        self.worker = WorkerProcess(None, cfg.memory_mb, cfg.call_timeout_s, module=trainer_wall.TRAINER_MODULE,
                                    init={"isolation": cfg.to_json()}, env=env, startup_timeout_s=STARTUP_S, name="trainer", layer_names=TRAINER_LAYERS,
                                    warn=False)
        self.seconds["start_s"] = time.monotonic() - t

    # -- phases ---------------------------------------------------------------------------------------------
    def setup(self) -> None:
        t = time.monotonic()
        limit = self.jobs[0].train.jax.compile_timeout_s
        jobs = [replace(j, program=None) for j in self.jobs]
        reply, _ = self.worker.request({"op": "setup", "width": self.width}, pickle.dumps((jobs, self.executables)),
                                       limit, 0,
                                       "loading and compiling the training program",
                                       f"train.jax.compile_timeout_s={limit:g}")
        if not replies.is_ok(reply):
            raise replies.RewardProgramError(replies.failure_from(reply))  # its kind: train_error (run_trainer)
        self.rows = replies.integer(reply.get("rows"), "rows", 1, 1 << 24)
        settings = reply.get("settings")
        if not isinstance(settings, dict):
            raise replies.bad("settings must be an object")
        self.steps_per_update = replies.integer(settings.get("steps_per_update"), "steps_per_update", 1, 1 << 40)
        self.n_updates = replies.integer(settings.get("n_updates"), "n_updates", 1, 1 << 40)
        devices = replies.text_list(reply.get("devices"), 16, 100, "devices")
        self.summary = {"settings": settings, "timing": read_timing(reply.get("timing")), "slots": self.width,
                        "devices": devices}
        dropped = replies.layer_list(reply.get("layers"), ("unprivileged_user",))[0]
        if dropped["active"]:  # the deferred uid drop of a root trainer, done before any artefact is sent
            self.worker.layers = [dropped if d["name"] == "unprivileged_user" else d for d in self.worker.layers]
        isolation_report(self.worker.layers)
        self.summary["isolation"] = {d["name"]: d["active"] for d in self.worker.layers}
        self.seconds["setup_s"] = time.monotonic() - t

    def load(self) -> None:
        t = time.monotonic()
        metas, blobs = [], []
        for job in self.jobs:
            p = job.program
            metas.append(None if p is None else {"components": list(p.components), "obs_dim": p.obs_dim,
                                                 "act_dim": p.act_dim, "rows": p.rows, "size": len(p.hlo)})
            blobs.append(b"" if p is None else bytes(p.hlo))
        self.blame = True  # from here on, a program may be the cause of what goes wrong
        reply, _ = self.worker.request({"op": "load", "programs": metas}, b"".join(blobs), LOAD_S, 0,
                                       "loading the reward programs", f"load time limit ({LOAD_S:g} s)")
        if not replies.is_ok(reply):
            raise replies.RewardProgramError(replies.failure_from(reply))
        self.failures.update(job_failures(reply.get("failures"), len(self.jobs)))
        live = reply.get("live")
        # every job is either live or failed, once (a job in neither would come back "ok" without training)
        if not isinstance(live, list) or [i for i in live if i not in range(len(self.jobs))] or \
                sorted([*live, *self.failures]) != list(range(len(self.jobs))):
            raise replies.bad("a list of live jobs that does not match the group")
        self.live = [i for i in range(len(self.jobs)) if i in live]
        self.seconds["load_s"] = time.monotonic() - t

    def train(self) -> None:
        t = time.monotonic()
        limit = self.jobs[0].train.jax.update_timeout_s
        total = self.jobs[0].train.timeout_s
        hard = self.start + total + TIMEOUT_GRACE_S if total else math.inf
        self.worker.send({"op": "train"}, b"", time.monotonic() + 60.0, "starting training", "60 s")
        while True:
            deadline = min(time.monotonic() + limit, hard)
            what = f"training update {self.updates + 1} (with its evaluation)"
            try:
                frame, _ = self.worker.receive(deadline, 0, what, f"train.jax.update_timeout_s={limit:g} (wall clock)")
            except replies.RewardProgramError:
                if time.monotonic() >= hard:  # the group's overall limit, not a culprit's doing
                    self.worker.close()
                    for i in self.live:
                        self.failures.setdefault(i, Failure(FailureKind.TIMEOUT,
                                                            f"training exceeded train.timeout_s={total:g}"))
                    raise _Stopped from None
                raise
            if self._frame(frame):
                break
        self.seconds["train_s"] = time.monotonic() - t

    def _frame(self, frame: dict[str, Any]) -> bool:
        """Handle one training frame; True at the last one."""
        event = frame.get("event")
        if event == "update":
            self.updates = replies.integer(frame.get("update"), "update", self.updates + 1,
                                           min(self.updates + 1, self.n_updates))
            return False
        if event == "checkpoint":
            i = replies.integer(frame.get("job"), "job", 0, len(self.jobs) - 1)
            if i not in self.live or len(self.curves[i]) >= self.jobs[i].n_checkpoints:  # live: not failed
                raise replies.bad(f"a checkpoint for job {i}, which is not training or has all its checkpoints")
            # a checkpoint belongs to the update in progress (evaluated before its "update" frame)
            c = read_checkpoint(frame.get("checkpoint"), self.jobs[i], (self.updates + 1) * self.steps_per_update)
            self.curves[i].append(c)
            if self.progress:
                self.progress(self.jobs[i].candidate_id, c.env_steps, self.jobs[i].env_steps, c.score)
            return False
        if event == "trained":
            self.failures.update(job_failures(frame.get("failures"), len(self.jobs)))
            self.updates = replies.integer(frame.get("updates"), "updates", self.updates, self.updates)
            self.summary["timing"] = read_timing(frame.get("timing"))
            self._check_shipped(frame.get("shipped"))
            return True
        if event == "error" or frame.get("ok") is False:
            raise replies.RewardProgramError(replies.failure_from(frame))
        raise replies.bad(f"an unknown training frame {clean_text(event, 40)!r}")

    def _check_shipped(self, value: Any) -> None:
        """The checkpoint each trained job shipped must be the one train.checkpoint_selection picks from its curve
        (the policy and rollouts sent next are that checkpoint's)."""
        trained = [i for i in self.live if i not in self.failures]
        if not isinstance(value, dict) or sorted(value) != sorted(str(i) for i in trained):
            raise replies.bad("shipped checkpoints that do not match the jobs that trained")
        for i in trained:
            want, _ = choose_checkpoint(self.jobs[i], self.curves[i])
            if replies.integer(value[str(i)], "shipped", -1, 1 << 20) != want:
                raise replies.bad(f"job {i} shipped checkpoint {value[str(i)]}; its rule picks {want}")

    def collect_outputs(self) -> None:
        ok = [i for i in self.live if i not in self.failures]
        if not ok or not any(self.jobs[i].save_policy or self.jobs[i].collect_episodes for i in ok):
            self.worker.close()
            return
        t = time.monotonic()
        deadline = time.monotonic() + OUTPUTS_S
        what, limit = "policies and rollouts", f"outputs time limit ({OUTPUTS_S:g} s)"
        self.worker.send({"op": "outputs"}, b"", deadline, what, limit)
        budget = MAX_OUTPUT_BYTES  # every job's outputs together
        while True:
            frame, data = self.worker.receive(deadline, budget, what, limit)
            budget -= len(data)
            if frame.get("event") == "done":
                break
            if frame.get("event") != "output":
                raise replies.RewardProgramError(replies.failure_from(frame))
            i = replies.integer(frame.get("job"), "job", 0, len(self.jobs) - 1)
            if i not in ok or i in self.outputs:
                raise replies.bad(f"outputs for job {i}, which did not train or already has them")
            self.outputs[i] = read_outputs(frame, data, self.jobs[i])
        self.worker.close()
        self.seconds["outputs_s"] = time.monotonic() - t

    def results(self) -> list[TrainResult]:
        wall = time.monotonic() - self.start
        out = []
        for i, job in enumerate(self.jobs):
            policy, rollouts = self.outputs.get(i, (None, None))
            steps = self.updates * self.steps_per_update if i in self.live else 0
            out.append(write_result(job, self.curves[i], steps, wall, self.failures.get(i), self.summary, policy,
                                    rollouts))
        return out


class _Stopped(Exception):
    """train.timeout_s passed: the jobs are recorded as timed out with the curves so far."""


def run_trainer(jobs: list[TrainJob], width: int, progress: Progress | None = None, executables: bool = True) \
        -> Attempt:
    """Train one group in one fresh isolated trainer; never raises for anything the trainer does. `executables=False`
    leaves the compile step's executables out: the trainer traces and compiles the program itself (the baseline of
    bench/bench_trainer_start.py)."""
    compiled = ensure_compiled([replace(j, program=None) for j in jobs], width, jobs[0].train.jax.compile_timeout_s)
    if isinstance(compiled, Failure):
        return Attempt(group=compiled)
    run = None
    try:
        run = _Run(jobs, width, progress, compiled if executables else None)
        try:
            run.setup()
            run.load()
            if run.live:
                run.train()
                run.collect_outputs()
            else:
                run.worker.close()
        except _Stopped:
            pass
        results = run.results()  # the files: a disk that fails here is the host's failure too
    except replies.RewardProgramError as exc:
        blame = run is not None and run.blame
        kind = exc.failure.kind if blame else FailureKind.TRAIN_ERROR
        return Attempt(group=Failure(kind, exc.failure.reason, exc.failure.detail), blame=blame,
                       seconds=run.seconds if run else {}, layers=run.worker.layers if run else [])
    except Exception as exc:  # noqa: BLE001 - the host's own failure (spawn, disk): every job's, no culprit
        return Attempt(group=Failure(FailureKind.TRAIN_ERROR, f"the trainer host failed: {type(exc).__name__}: "
                                                              f"{exc}"[:500]))
    finally:
        if run is not None:
            run.worker.close()
    return Attempt(results=results, seconds=run.seconds, layers=run.worker.layers)
