"""The jax language's runner (worker side): compute_reward traced once with jax.export (bird/reward/jax_export.py).

Requests: {"op": "trace", "act_dim"} exports the program for a symbolic batch size (its failures are the CPU
path's kinds); {"op": "export", "rows"} exports it again for exactly `rows` rows and returns the serialised
StableHLO and the component names (the trainer's artefact); {"op": "dry_run", "rows", "seed"} runs that artefact
once at its size (the host's deadline is the budget); any other request is a numeric call on a float64 batch,
answered with the numpy runner's float64 table (the smoke check runs the *exported* computation)."""

from __future__ import annotations

from typing import Any

import numpy as np

from bird.reward.jax_export import ExportError, JaxProgram, setup_worker

__all__ = ["JaxRunner", "jax_runner"]


class JaxRunner:
    def __init__(self, fn: Any, fields: list[list[Any]]) -> None:
        self.fn, self.fields = fn, fields
        self.obs_dim = sum(int(f[2]) for f in fields)  # a field is [name, start, size] or [name, start, size, shape, kind]
        self.program: JaxProgram | None = None
        self.shipped: JaxProgram | None = None
        self.act_dim = 0
        self.meta: dict[str, Any] = {}

    def _trace(self, act_dim: int) -> dict[str, Any] | None:
        if self.program is None:
            try:
                self.program = JaxProgram(self.fn, self.fields, self.obs_dim, int(act_dim))
            except ExportError as exc:
                return {"ok": False, "kind": exc.kind, "reason": exc.reason[:500]}
            self.act_dim = int(act_dim)
        return None

    def _export(self, rows: int) -> tuple[dict[str, Any], bytes]:
        if self.program is None:
            return {"ok": False, "kind": "runtime_error", "reason": "export before trace"}, b""
        try:
            self.shipped = JaxProgram(self.fn, self.fields, self.obs_dim, self.act_dim, rows=rows)
        except ExportError as exc:
            return {"ok": False, "kind": exc.kind, "reason": exc.reason[:500]}, b""
        return {"ok": True, "names": self.shipped.names}, self.shipped.serialize()

    def __call__(self, header: dict[str, Any], payload: bytes) -> tuple[dict[str, Any], bytes]:
        op = header.get("op")
        if op == "trace":
            return self._trace(int(header["act_dim"])) or {"ok": True, "names": self.program.names}, b""
        if op == "export":
            return self._export(int(header["rows"]))
        if op == "dry_run":
            if self.shipped is None or self.shipped.rows != int(header["rows"]):
                return {"ok": False, "kind": "runtime_error", "reason": "dry run before export"}, b""
            self.shipped.dry_run(int(header["seed"]))
            return {"ok": True}, b""
        b, d, a = int(header["batch"]), int(header["obs_dim"]), int(header["act_dim"])
        if (failed := self._trace(a)) is not None:
            return failed, b""
        x = np.frombuffer(payload, dtype="<f8")
        obs, act, nxt = x[: b * d].reshape(b, d), x[b * d : b * d + b * a].reshape(b, a), x[b * d + b * a : b * (2 * d + a)].reshape(b, d)
        reward, comps = self.program(obs, act, nxt)
        table = np.column_stack([reward, *comps.values()]) if comps else reward[:, None]
        return {"ok": True, "names": list(comps)}, np.ascontiguousarray(table, dtype="<f8").tobytes()


def jax_runner(ns: dict[str, Any], contract: str, entry: str, fields: list[list[Any]]) -> JaxRunner:
    """The runner for a loaded program (contract compute_reward only: the JAX learner's contract)."""
    if contract != "compute_reward":
        raise ValueError(f"reward.language=jax supports the compute_reward contract, not {contract!r}")
    setup_worker()  # jax's CPU runtime starts its threads here, after the layers (Landlock needs one thread)
    return JaxRunner(ns[entry], fields)
