"""Parent side of the reward-program worker: start it, call it on batches, enforce time limits, check outputs."""

from __future__ import annotations

import json
import os
import select
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bird.envs.base import ObsIndex
from bird.reward.static import CONTRACT_ENTRIES, check_source
from bird.types import Failure, FailureKind

__all__ = ["SandboxedReward", "RewardProgramError"]

_WORKER = Path(__file__).with_name("worker.py")
_STARTUP_TIMEOUT_S = 60.0


class RewardProgramError(RuntimeError):
    """The program failed (raised, timed out, returned bad or non-finite values); carries the Failure record."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(f"{failure.kind}: {failure.reason}")
        self.failure = failure


class SandboxedReward:
    """A reward program running in its own worker process.

    Calling it with obs (B, D), action (B, A), next_obs (B, D) returns (reward (B,), {component: (B,)}).
    """

    def __init__(
        self,
        code: str,
        obs_index: ObsIndex,
        call_timeout_s: float = 5.0,
        memory_mb: int = 2048,
        entry: str | None = None,
        contract: str = "compute_reward",
    ) -> None:
        self.obs_index = obs_index
        self.call_timeout_s = call_timeout_s
        self.component_names: tuple[str, ...] = ()
        self.last_debug: dict[int, str] = {}  # debug_fn output of the last call's debug rows (reward_class)
        entry = entry or CONTRACT_ENTRIES[contract]
        static = check_source(code, entry, contract=contract)  # always enforced, whoever builds the sandbox
        if static is not None:
            raise RewardProgramError(static)
        self._proc = subprocess.Popen(
            [sys.executable, "-I", str(_WORKER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={"PATH": os.defpath, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"},
            close_fds=True,
            cwd="/",
        )
        fields = [[f.name, f.start, f.size] for f in obs_index.fields]
        init = {"code": code, "entry": entry, "fields": fields, "memory_mb": memory_mb, "contract": contract}
        reply, _ = self._roundtrip(init, b"", _STARTUP_TIMEOUT_S)
        if not reply.get("ok"):
            self.close()
            raise RewardProgramError(_failure_from(reply))
        self.plan_list: list[str] = [str(p) for p in reply.get("plan_list", [])]  # progress_program only
        self.weights: dict[str, float] = {str(k): float(v) for k, v in reply.get("weights", {}).items()}  # weighted only

    # -- protocol -----------------------------------------------------------------------------------------
    def _roundtrip(self, header: dict[str, Any], payload: bytes, timeout: float) -> tuple[dict[str, Any], bytes]:
        h = json.dumps(header).encode()
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.write(struct.pack("<I", len(h)) + h + struct.pack("<Q", len(payload)) + payload)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise RewardProgramError(self._dead_failure()) from None
        deadline = time.monotonic() + timeout
        (hlen,) = struct.unpack("<I", self._read(4, deadline))
        if hlen > 1 << 20:
            raise RewardProgramError(Failure(FailureKind.BAD_OUTPUT, "worker sent an oversized header"))
        reply = json.loads(self._read(hlen, deadline))
        (plen,) = struct.unpack("<Q", self._read(8, deadline))
        return reply, self._read(plen, deadline) if plen else b""

    def _read(self, n: int, deadline: float) -> bytes:
        assert self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        chunks, got = [], 0
        while got < n:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.close()
                raise RewardProgramError(
                    Failure(FailureKind.TIMEOUT, f"reward program exceeded {self.call_timeout_s:g} s per call")
                )
            chunk = os.read(fd, n - got)
            if not chunk:
                raise RewardProgramError(self._dead_failure())
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def _dead_failure(self) -> Failure:
        code = self._proc.poll()
        self.close()
        return Failure(FailureKind.RUNTIME_ERROR, f"reward worker died (exit code {code}); memory limit or crash")

    # -- public -------------------------------------------------------------------------------------------
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
        header = {"batch": b, "obs_dim": d, "act_dim": action.shape[1], "n_envs": int(n_envs), "reset": bool(reset),
                  "has_dones": dones is not None, "debug_rows": [int(r) for r in debug_rows or []]}
        payload = obs.tobytes() + action.tobytes() + next_obs.tobytes()
        if dones is not None:
            payload += np.ascontiguousarray(np.asarray(dones).reshape(b), dtype=np.float64).tobytes()
        reply, data = self._roundtrip(header, payload, self.call_timeout_s)
        if not reply.get("ok"):
            raise RewardProgramError(_failure_from(reply))
        self.last_debug = {int(k): str(v) for k, v in reply.get("debug", {}).items()}
        names = [str(n) for n in reply.get("names", [])]
        values = np.frombuffer(data, dtype=np.float64)
        if values.size != b * (1 + len(names)):
            raise RewardProgramError(Failure(FailureKind.BAD_OUTPUT, "worker reply has the wrong size"))
        values = values.reshape(b, 1 + len(names))
        if not np.isfinite(values).all():
            bad = ["reward", *names][int(np.where(~np.isfinite(values).all(axis=0))[0][0])]
            raise RewardProgramError(Failure(FailureKind.NON_FINITE, f"{bad} returned a non-finite value"))
        self.component_names = tuple(names)
        return values[:, 0].copy(), {n: values[:, i + 1].copy() for i, n in enumerate(names)}

    def close(self) -> None:
        if not hasattr(self, "_proc"):
            return
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass

    def __enter__(self) -> SandboxedReward:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - best effort at interpreter shutdown
            pass


def _failure_from(reply: dict[str, Any]) -> Failure:
    try:
        kind = FailureKind(reply.get("kind", "runtime_error"))
    except ValueError:
        kind = FailureKind.RUNTIME_ERROR
    return Failure(kind, str(reply.get("reason", "unknown error"))[:500], str(reply.get("detail", ""))[:4000])
