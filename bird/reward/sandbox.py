"""Host side of the reward-program worker: start it isolated, load the program, call it on batches, enforce the
time limits, and validate every reply frame (float64 only, converted here, never by the program's objects)."""

from __future__ import annotations

import json
import logging
import os
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from bird.envs.base import ObsIndex
from bird.reward import isolation, protocol, replies
from bird.reward.languages import Language, get_language
from bird.reward.replies import MAX_COMPONENTS, RewardProgramError
from bird.reward.static import CONTRACT_ENTRIES, check_source
from bird.types import Failure, FailureKind

__all__ = ["SandboxedReward", "RewardProgramError", "SandboxSetupError", "WorkerProcess",
           "JAX_DRY_RUN_SEED", "BOOT", "worker_paths"]

log = logging.getLogger(__name__)

STARTUP_TIMEOUT_S = 60.0  # interpreter + numpy import + layers: trusted code, not the program
_BOOT = ("import ctypes, importlib, json, site, sys; "
         # the process's name in ps, top and process accounting: bird-worker, bird-trainer, bird-inspector, ...
         "ctypes.CDLL(None).prctl(15, ('bird-' + sys.argv[3].rpartition('.')[2])[:15].encode(), 0, 0, 0); "
         "paths = json.loads(sys.argv[2]); sys.path[:0] = paths; "
         # an interpreter outside the venv: its site-packages' .pth files (editable installs) as the venv would
         "[site.addsitedir(p) for p in paths if p.endswith(('site-packages', 'dist-packages'))]; "
         "importlib.import_module(sys.argv[3]).main(int(sys.argv[1]))")
_warned: set[tuple[str, ...]] = set()
BOOT = _BOOT  # `python -I -c BOOT FD PATHS MODULE`: how every isolated process (and the trainer's compile step) starts


_TRACE_TIMEOUT_S = 120.0  # jax tracing and lowering of one program (XLA's first compile included)
_MAX_EXPORT_BYTES = 16 * 2**20  # serialised StableHLO of one reward program
JAX_DRY_RUN_SEED = 20  # the dry run's inputs: standard normal rows from this seed


class SandboxSetupError(RuntimeError):
    """The sandbox cannot start on this machine as installed (not a program's failure); the message says what to
    change. Raised when the first worker starts, before any program runs."""


def worker_paths() -> list[str]:
    """sys.path for the worker: where bird is, then the host's absolute path entries (it starts with -I)."""
    root = str(Path(__file__).resolve().parents[2])
    return list(dict.fromkeys([root] + [p for p in sys.path if os.path.isabs(p) and os.path.isdir(p)]))


def _children(pid: int) -> list[int]:
    """The children of a live, unreaped child `pid` of this process (/proc/PID/task/PID/children)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(p) for p in fh.read().split()]
    except (OSError, ValueError):
        return []


def _death(code: int | None, call_timeout_s: float, name: str = "reward worker", cgroup: str = "") -> Failure:
    if code is not None and code < 0:
        sig = -code
        if sig == signal.SIGXCPU:
            return Failure(FailureKind.TIMEOUT, f"the CPU-time limit fired (RLIMIT_CPU: call_timeout_s="
                                                f"{call_timeout_s:g} s + 1 s of CPU per call)")
        if sig == signal.SIGXFSZ:
            return Failure(FailureKind.RUNTIME_ERROR, "the file-size limit fired (RLIMIT_FSIZE=0: no file may grow)")
        if sig == signal.SIGSYS:
            return Failure(FailureKind.RUNTIME_ERROR, "the syscall filter (seccomp) killed the worker")
        if sig == signal.SIGKILL and cgroup:
            return Failure(FailureKind.RUNTIME_ERROR, f"{name} killed (SIGKILL): {cgroup} fired")
        if sig == signal.SIGKILL:
            return Failure(FailureKind.RUNTIME_ERROR, f"{name} killed (SIGKILL): its CPU-time budget "
                                                      f"({isolation.CPU_BUDGET_S} s) or the out-of-memory killer")
        try:
            signame = signal.Signals(sig).name
        except ValueError:
            signame = f"signal {sig}"
        return Failure(FailureKind.RUNTIME_ERROR, f"{name} crashed ({signame})")
    return Failure(FailureKind.RUNTIME_ERROR, f"{name} exited (code {code}) before replying")


class WorkerProcess:
    """One isolated process: spawn, framed requests with deadlines, validated reply frames, group kill.

    :param language: the reward-program language (its environment and init message); None with `init` and `env`.
    :param module: the entry module; its main(result_fd) applies the layers first (bird.reward.worker.start).
    :param extra_paths: put before the host's sys.path in the worker (where a test's entry module lives).
    :param init: the first request (it carries the isolation settings); default: the language's.
    :param env: the process's whole environment besides PATH; default: the language's.
    :param name: how messages name this process ("reward worker", "trainer", ...).
    :param layer_names: the layers it must report; `warn`: log the inactive ones once per process (the trainer
        reports after its deferred uid drop instead).
    """

    def __init__(self, language: Language | None, memory_mb: int, call_timeout_s: float,
                 module: str = "bird.reward.worker", extra_paths: tuple[str, ...] = (),
                 init: dict[str, Any] | None = None, env: Mapping[str, str] | None = None,
                 startup_timeout_s: float = STARTUP_TIMEOUT_S,
                 name: str = "reward worker", layer_names: tuple[str, ...] = isolation.LAYERS,
                 warn: bool = True) -> None:
        isolation.harden_host()  # the parent and every training process: /proc/<pid>/environ and mem unreadable
        self.call_timeout_s = call_timeout_s
        self.name = name
        self.seq = 0
        self.workdir = tempfile.mkdtemp(prefix=f"bird-{name.split()[0]}-")
        r, w = os.pipe()
        env = {"PATH": os.defpath, **(env if env is not None else language.env if language else {})}
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-c", _BOOT, str(w), json.dumps([*extra_paths, *worker_paths()]), module],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(w,),
                env=env, cwd=self.workdir, start_new_session=True, close_fds=True,
            )
        except BaseException:
            os.close(r)
            shutil.rmtree(self.workdir, ignore_errors=True)
            raise
        finally:
            os.close(w)
        self.fd = r
        self._poll = select.poll()  # not select(): a host with more than 1,024 open fds is fine
        self._poll.register(r, select.POLLIN)
        assert self.proc.stdin is not None
        self._stdin = self.proc.stdin.fileno()
        os.set_blocking(self._stdin, False)  # a worker that stops reading must not block the host
        self._out_poll = select.poll()
        self._out_poll.register(self._stdin, select.POLLOUT)
        if init is None:
            assert language is not None, "a WorkerProcess without a language needs its init message"
            init = {"language": language.name, "isolation": {
                "memory_mb": memory_mb, "call_timeout_s": call_timeout_s, "host_pid": os.getpid()}}
        reply, _ = self.request(init, b"", startup_timeout_s, 0, f"{name} start-up (interpreter, imports, layers)",
                                f"{startup_timeout_s:g} s start-up limit")
        if "refused" in reply:
            self.close()
            raise SandboxSetupError("the reward sandbox cannot start: " + protocol.clean_text(reply["refused"], 1500))
        self.layers = replies.layer_list(reply.get("layers"), layer_names)
        inactive = tuple(d["name"] for d in self.layers if not d["active"])
        if warn and inactive and inactive not in _warned:
            _warned.add(inactive)
            log.warning("%s runs without these OS layers: %s (python -m bird.reward check --explain)",
                        name, ", ".join(inactive))

    @property
    def inactive_layers(self) -> dict[str, str]:
        return {d["name"]: d["detail"] for d in self.layers if not d["active"]}

    # -- frames -----------------------------------------------------------------------------------------------
    def request(self, header: dict[str, Any], payload: bytes, timeout: float, max_payload: int, what: str,
                limit: str) -> tuple[dict[str, Any], bytes]:
        """Send one request; return the reply header and payload, both size-checked. Raises RewardProgramError."""
        deadline = time.monotonic() + timeout
        self.send(header, payload, deadline, what, limit)
        return self.receive(deadline, max_payload, what, limit)

    def send(self, header: dict[str, Any], payload: bytes, deadline: float, what: str, limit: str) -> None:
        """Write one request (a new sequence number) before `deadline` (time.monotonic)."""
        self.seq += 1
        self._write(protocol.encode({**header, "seq": self.seq}, payload), deadline, what, limit)

    def receive(self, deadline: float, max_payload: int, what: str, limit: str) -> tuple[dict[str, Any], bytes]:
        """The next reply frame of the current request, read before `deadline`: a JSON object of at most
        protocol.MAX_HEADER bytes with the current sequence number, and at most `max_payload` payload bytes."""
        (hlen,) = struct.unpack("<I", self._read(4, deadline, what, limit))
        if hlen > protocol.MAX_HEADER:
            self._bad(f"reply header of {hlen} bytes (limit {protocol.MAX_HEADER})")
        try:
            reply = json.loads(self._read(hlen, deadline, what, limit))
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested too deep to read
            self._bad("a reply header that is not JSON (or nested too deeply)")
        if not isinstance(reply, dict) or reply.get("seq") != self.seq:
            self._bad("a reply frame out of sequence")
        (plen,) = struct.unpack("<Q", self._read(8, deadline, what, limit))
        if plen > max_payload:
            self._bad(f"a reply payload of {plen} bytes (at most {max_payload} expected)")
        return reply, self._read(plen, deadline, what, limit) if plen else b""

    def _bad(self, what: str) -> None:
        self.close()
        raise RewardProgramError(Failure(FailureKind.BAD_OUTPUT, f"{self.name} sent {what}"))

    def _write(self, data: bytes, deadline: float, what: str, limit: str) -> None:
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0 or not self._out_poll.poll(max(1, int(left * 1000))):
                self.close()
                raise RewardProgramError(Failure(FailureKind.TIMEOUT, f"{what} exceeded the {limit}"))
            try:
                view = view[os.write(self._stdin, view[: 1 << 20]):]
            except BlockingIOError:
                continue
            except OSError:  # EPIPE: the worker is gone
                raise RewardProgramError(self._dead()) from None

    def _read(self, n: int, deadline: float, what: str, limit: str) -> bytes:
        chunks, got = [], 0
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0 or not self._poll.poll(max(1, int(left * 1000))):
                self.close()
                raise RewardProgramError(Failure(FailureKind.TIMEOUT, f"{what} exceeded the {limit}"))
            chunk = os.read(self.fd, min(n - got, 1 << 20))
            if not chunk:
                raise RewardProgramError(self._dead())
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    @staticmethod
    def _kill(pid: int) -> None:
        """SIGKILL the worker inside its pid namespace first and let its waiting parent `pid` see it die, so that
        nothing is orphaned (a host that is a subreaper or pid 1 would inherit it as a zombie); then the group."""
        inner = _children(pid)
        for child in inner:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 2.0
        while inner and time.monotonic() < deadline:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                break
            time.sleep(0.002)
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def _dead(self) -> Failure:
        """Why the worker went away: its exit status, read without reaping it (so its group can still be killed)."""
        code, deadline = None, time.monotonic() + 5.0
        while self.proc.returncode is None and time.monotonic() < deadline:
            info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if info is not None:
                killed = info.si_code in (os.CLD_KILLED, os.CLD_DUMPED)
                code = -info.si_status if killed else info.si_status
                break
            time.sleep(0.01)
        fired = isolation.tasks_fired(self.proc.pid)  # read before close() removes its cgroup
        self.close()
        return _death(code, self.call_timeout_s, self.name, fired)

    def close(self) -> None:
        """Kill the worker's whole process group, reap it, remove its working directory and its cgroup."""
        proc = getattr(self, "proc", None)
        if proc is not None:
            if proc.returncode is None:  # not reaped: its pid (= its group id) cannot have been reused
                self._kill(proc.pid)
            proc.wait()
            isolation.release_tasks(proc.pid)  # the worker's cgroup, once its processes are gone
            for stream in (proc.stdin,):
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass
        if getattr(self, "fd", None) is not None:
            os.close(self.fd)
            self.fd = None
        if getattr(self, "workdir", None):
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = ""


def _decode_table(reply: dict[str, Any], data: bytes, batch: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """reward (B,), {component: (B,)} from a float64 (B, 1 + n) table; names are short identifiers."""
    names = replies.component_names(reply.get("names"))
    if len(data) != batch * (1 + len(names)) * 8:
        raise replies.bad("worker reply has the wrong size")
    values = np.frombuffer(data, dtype="<f8").reshape(batch, 1 + len(names))
    if not np.isfinite(values).all():
        bad = ["reward", *names][int(np.where(~np.isfinite(values).all(axis=0))[0][0])]
        raise RewardProgramError(Failure(FailureKind.NON_FINITE, f"{bad} returned a non-finite value"))
    return values[:, 0].copy(), {n: values[:, i + 1].copy() for i, n in enumerate(names)}


_DECODERS = {"float64_table": _decode_table}  # Language.reply -> host-side decoder


class SandboxedReward:
    """A reward program running in its own isolated worker process.

    Calling it with obs (B, D), action (B, A), next_obs (B, D) returns (reward (B,), {component: (B,)}).
    `layers` lists the OS layers the worker reported at start-up ({name, active, detail}).
    """

    def __init__(
        self,
        code: str,
        obs_index: ObsIndex,
        call_timeout_s: float = 5.0,
        memory_mb: int = 2048,
        entry: str | None = None,
        contract: str = "compute_reward",
        language: str = "numpy",
        action_dim: int | None = None,
    ) -> None:
        self.obs_index = obs_index
        self.call_timeout_s = call_timeout_s
        self.component_names: tuple[str, ...] = ()
        self.last_debug: dict[int, str] = {}  # debug_fn output of the last call's debug rows (reward_class)
        self.language = get_language(language)
        entry = entry or CONTRACT_ENTRIES[contract]
        static = check_source(code, entry, contract=contract, language=language)  # always, whoever builds it
        if static is not None:
            raise RewardProgramError(static)
        self._worker = WorkerProcess(self.language, memory_mb, call_timeout_s)
        self.layers = self._worker.layers
        fields = [[f.name, f.start, f.size, list(f.shape), f.kind] for f in obs_index.fields]
        load = {"code": code, "entry": entry, "fields": fields, "contract": contract}
        reply, _ = self._worker.request(load, b"", call_timeout_s, 0, "module-level code",
                                        f"per-call time limit (call_timeout_s={call_timeout_s:g} s, wall clock)")
        try:
            self._loaded(reply, action_dim)
        except BaseException:
            self.close()
            raise

    def _loaded(self, reply: dict[str, Any], action_dim: int | None) -> None:
        """Read the load reply; a jax program is traced and exported now (its failures are this program's)."""
        if not replies.is_ok(reply):
            raise RewardProgramError(replies.failure_from(reply))
        self.plan_list: list[str] = replies.text_list(reply.get("plan_list", []), 64, 300, "plan_list")
        self.weights: dict[str, float] = replies.finite_map(reply.get("weights", {}), 64, "REWARD_WEIGHTS")
        self.action_dim = action_dim
        if self.language.name == "jax":
            if action_dim is None:
                raise ValueError("a jax reward program is exported for a fixed action size: pass action_dim")
            reply, _ = self._worker.request({"op": "trace", "act_dim": int(action_dim)}, b"", _TRACE_TIMEOUT_S, 0,
                                            "jax tracing", f"tracing time limit ({_TRACE_TIMEOUT_S:g} s)")
            if not replies.is_ok(reply):
                raise RewardProgramError(replies.failure_from(reply))
            self.component_names = replies.component_names(reply.get("names"))

    @property
    def inactive_layers(self) -> dict[str, str]:
        return self._worker.inactive_layers

    def __call__(
        self, obs: np.ndarray, action: np.ndarray, next_obs: np.ndarray, dones: np.ndarray | None = None,
        n_envs: int = 1, reset: bool = False, debug_rows: list[int] | None = None,
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Rows are (T, n_envs) flattened time-major; `dones` (rows,) ends an episode after its row (stateful
        contracts start a fresh instance there); `reset` starts every env slot afresh; `debug_rows` asks a
        reward_class program for debug_fn output on those rows (in `last_debug`)."""
        obs = np.ascontiguousarray(obs, dtype=np.float64)
        action = np.ascontiguousarray(action, dtype=np.float64).reshape(len(obs), -1)
        next_obs = np.ascontiguousarray(next_obs, dtype=np.float64)
        b, d = obs.shape
        rows = sorted({int(r) for r in debug_rows or [] if 0 <= int(r) < b})
        header = {"batch": b, "obs_dim": d, "act_dim": action.shape[1], "n_envs": int(n_envs), "reset": bool(reset),
                  "has_dones": dones is not None, "debug_rows": rows}
        payload = obs.tobytes() + action.tobytes() + next_obs.tobytes()
        if dones is not None:
            payload += np.ascontiguousarray(np.asarray(dones).reshape(b), dtype=np.float64).tobytes()
        reply, data = self._worker.request(
            header, payload, self.call_timeout_s, b * (1 + MAX_COMPONENTS) * 8, "reward program",
            f"per-call time limit (call_timeout_s={self.call_timeout_s:g} s, wall clock)")
        if not replies.is_ok(reply):
            raise RewardProgramError(replies.failure_from(reply))
        reward, comps = _DECODERS[self.language.reply](reply, data, b)
        self.last_debug = replies.debug_texts(reply.get("debug"), rows)
        self.component_names = tuple(comps)
        return reward, comps

    def export(self, rows: int, dry_run_timeout_s: float) -> Any:
        """The program as an ExportedReward for batches of exactly `rows` rows (serialised StableHLO + component
        names; reward.language=jax only), after a dry run at that size: the worker compiles and runs the exported
        computation once on `rows` rows within `dry_run_timeout_s` (wall clock), so loops and sorts that only bite
        at training size fail here, as this program's failure, and not in the trainer."""
        from bird.reward.jax_export import MAX_ROWS, ExportedReward

        if self.language.name != "jax":
            raise ValueError(f"only jax programs can be exported (this one is {self.language.name})")
        if not 1 <= rows <= MAX_ROWS:
            raise ValueError(f"rows={rows} is outside 1..{MAX_ROWS}")
        reply, data = self._worker.request({"op": "export", "rows": int(rows)}, b"", _TRACE_TIMEOUT_S,
                                           _MAX_EXPORT_BYTES, "jax export", f"tracing time limit ({_TRACE_TIMEOUT_S:g} s)")
        if not replies.is_ok(reply) or not data:
            raise RewardProgramError(replies.failure_from(reply))
        names = replies.component_names(reply.get("names"))
        if names != self.component_names:
            raise replies.bad(f"the export names components {list(names)}, the trace {list(self.component_names)}")
        reply, _ = self._worker.request(
            {"op": "dry_run", "rows": int(rows), "seed": JAX_DRY_RUN_SEED}, b"", dry_run_timeout_s, 0,
            f"the training-size dry run ({rows:,} rows)", f"dry-run time limit ({dry_run_timeout_s:g} s, wall clock)")
        if not replies.is_ok(reply):
            raise RewardProgramError(replies.failure_from(reply))
        return ExportedReward(bytes(data), names, self.obs_index.dim, int(self.action_dim or 0), int(rows))

    def close(self) -> None:
        if hasattr(self, "_worker"):
            self._worker.close()

    def __enter__(self) -> SandboxedReward:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - best effort at interpreter shutdown
            pass
