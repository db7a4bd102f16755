"""Reward programs as serialised StableHLO (reward.language=jax): traced in the sandbox, called inside the trainer.

Sandbox side (the reward worker preloads this file, so it imports only the standard library, numpy, jax and
bird.reward.artefacts): `JaxProgram` wraps a program's `compute_reward` into f(obs (B, D), action (B, A),
next_obs (B, D)) -> (B, 1 + C) float32 columns [reward, *components], exported with `jax.export`: for a symbolic
batch size B (the worker's own numeric calls), or for exactly the training batch's rows (the artefact the trainer
gets: no symbolic shapes, no shape assertions, no custom calls).
Trainer side: `load` checks the bytes' metadata (bird/reward/artefacts.py) before deserialising them; the learner
then calls `Exported.call` inside its compiled program. The trainer never holds the program's source or its Python.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from bird.reward.artefacts import (
    ALLOWED_PLATFORMS,
    MAX_ROWS,
    ArtefactError,
    Expected,
    check_metadata,
    check_module,
)
from bird.reward.fields import Fields

__all__ = ["ExportedReward", "ExportError", "JaxProgram", "load", "PLATFORMS", "MAX_ROWS", "setup_worker"]

PLATFORMS = ALLOWED_PLATFORMS  # lowered for both, so a CPU sandbox serves a GPU trainer
ExportError = ArtefactError  # the name the learner and the worker use
_TRACE_HINT = ("compute_reward must use jax.numpy (jnp) on its inputs: numpy calls, float()/bool() of an array and "
               "Python if/while on array values cannot be traced (use jnp.where)")
_CUSTOM_CALL_HINT = ("it lowers to a native kernel (a custom call), which the trainer refuses: jnp.linalg's "
                     "solve/inv/det/eig*/svd/qr/cholesky do; use elementwise terms, sums and norms")


@dataclass(frozen=True)
class ExportedReward:
    """What the trainer receives for one reward program: serialised StableHLO for batches of exactly `rows` rows
    and the component names."""

    hlo: bytes
    components: tuple[str, ...]
    obs_dim: int
    act_dim: int
    rows: int

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.hlo).hexdigest()[:16]

    @property
    def expected(self) -> Expected:
        return Expected(self.obs_dim, self.act_dim, len(self.components), self.rows)


# -- sandbox side ---------------------------------------------------------------------------------------------
def setup_worker() -> dict[str, Any]:
    """Import jax on the CPU and start its runtime (before the worker's resource limits); the modules to allow."""
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_platforms", "cpu")
    jax.config.update("jax_include_full_tracebacks_in_locations", False)  # no source names in the artefact
    jax.config.update("jax_traceback_in_locations_limit", 0)
    jax.devices()
    jnp.zeros(1).block_until_ready()
    return {"jax": jax, "jnp": jnp}


def _column(name: str, value: Any, batch: Any) -> Any:
    import jax.numpy as jnp

    try:
        arr = jnp.asarray(value, dtype=jnp.float32)
    except (TypeError, ValueError) as exc:
        raise ExportError("bad_output", f"{name} is not numeric: {exc}") from None
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim == 0 and name != "reward":
        return jnp.broadcast_to(arr, (batch,))
    if arr.ndim != 1 or arr.shape[0] != batch:
        raise ExportError("bad_output", f"{name} has shape {tuple(arr.shape)}, expected (batch,)")
    return arr


class JaxProgram:
    """A loaded compute_reward, exported once at construction; calls run the exported computation."""

    def __init__(self, fn: Callable, fields: list[list], obs_dim: int, act_dim: int,
                 platforms: tuple[str, ...] = PLATFORMS, rows: int | None = None) -> None:
        import jax
        from jax import export

        self.fields, self.names = [(str(f[0]), int(f[1]), int(f[2])) for f in fields], []

        def split(x: Any) -> dict[str, Any]:
            return Fields({n: x[:, s] if k == 1 else x[:, s:s + k] for n, s, k in self.fields})

        def flat(obs: Any, act: Any, nxt: Any) -> Any:
            import jax.numpy as jnp

            out = fn(split(obs), act, split(nxt), {})
            if not (isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], dict)):
                raise ExportError("bad_output", "must return (reward, components_dict)")
            batch = obs.shape[0]
            self.names = [str(k) for k in out[1]]
            cols = [_column("reward", out[0], batch)]
            cols += [_column(f"component {k!r}", v, batch) for k, v in out[1].items()]
            return jnp.stack(cols, axis=1)

        (b,) = export.symbolic_shape("b") if rows is None else (rows,)
        specs = [jax.ShapeDtypeStruct((b, d), np.float32) for d in (obs_dim, act_dim, obs_dim)]
        try:
            self.exported = export.export(jax.jit(flat), platforms=platforms)(*specs)
        except ExportError:
            raise
        except Exception as exc:  # noqa: BLE001 - any tracing failure of an untrusted program is a failure record
            raise ExportError("runtime_error", f"{_TRACE_HINT}. {type(exc).__name__}: {str(exc)[:240]}") from None
        self._call = jax.jit(self.exported.call)
        self.obs_dim, self.act_dim, self.rows = obs_dim, act_dim, rows
        if rows is not None:  # the artefact for the trainer: the checks it will meet, with a repair hint
            text = self.exported.mlir_module()
            if "custom_call" in text:
                target = text.split("custom_call", 1)[1].split("(", 1)[0].strip(" @")[:60]
                raise ExportError("rejected", f"the program calls custom target {target!r}: {_CUSTOM_CALL_HINT}")

    def dry_run(self, seed: int) -> None:
        """One call at the exported size on standard normal rows (compile included): loops and sorts that only
        bite at the training batch size bite here."""
        rng = np.random.default_rng(seed)
        cast = [rng.standard_normal((self.rows, d), dtype=np.float32) for d in (self.obs_dim, self.act_dim,
                                                                                 self.obs_dim)]
        self._call(*cast).block_until_ready()

    def serialize(self) -> bytes:
        return bytes(self.exported.serialize())

    def __call__(self, obs: np.ndarray, act: np.ndarray, nxt: np.ndarray) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Numeric call (the smoke check): float64 in, the exported float32 computation, float64 out."""
        cast = [np.asarray(x, dtype=np.float32) for x in (obs, act, nxt)]
        out = np.asarray(self._call(*cast), dtype=np.float64)
        return out[:, 0].copy(), {n: out[:, i + 1].copy() for i, n in enumerate(self.names)}


# -- trainer side ---------------------------------------------------------------------------------------------
def _platform() -> str:
    import jax

    backend = jax.default_backend()
    return {"gpu": "cuda"}.get(backend, backend)


def load(prog: ExportedReward) -> Any:
    """Check the metadata, deserialise, and check the module (signature, operations); returns a jax.export.Exported
    whose `call` the learner jits. The artefact was inspected in a throwaway process before it got here
    (bird/reward/inspector.py); the trainer repeats every check (it parses the module to compile it anyway)."""
    from jax import export

    want = prog.expected
    platforms = check_metadata(prog.hlo, want)
    if _platform() not in platforms:
        raise ExportError("bad_output", f"exported for {list(platforms)}; the trainer runs on {_platform()}")
    try:
        exp = export.deserialize(bytearray(prog.hlo))
    except Exception as exc:  # noqa: BLE001 - corrupt bytes are this candidate's failure
        raise ExportError("bad_output", f"cannot deserialise the exported program: {type(exc).__name__}") from None
    check_module(exp, want)
    return exp
