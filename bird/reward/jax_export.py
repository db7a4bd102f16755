"""Reward programs as serialised StableHLO (reward.language=jax): traced in the sandbox, called inside the trainer.

Sandbox side (the reward worker loads this file by path, so it imports only the standard library, numpy and jax):
`JaxProgram` wraps a program's `compute_reward` into f(obs (B, D), action (B, A), next_obs (B, D)) -> (B, 1 + C)
float32 columns [reward, *components], exported with `jax.export` for a symbolic batch dimension B.
Trainer side: `load` deserialises the bytes and checks them (signature, effects, custom calls) before the learner
calls `Exported.call` inside its compiled program. The trainer never holds the program's source or its Python.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from bird.reward.fields import Fields

__all__ = ["ExportedReward", "ExportError", "JaxProgram", "load", "columns", "PLATFORMS", "setup_worker"]

PLATFORMS = ("cpu", "cuda")  # lowered for both, so a CPU sandbox serves a GPU trainer
# custom calls a reward program may lower to: shape checks and linear-algebra kernels (no host callbacks, no kernels
# written by the caller such as Mosaic/Pallas)
_ALLOWED_CUSTOM_CALLS = re.compile(
    r"^(shape_assertion|lapack_[a-z0-9]+_ffi|cusolver_[a-z0-9]+_ffi|hipsolver_[a-z0-9]+_ffi|"
    r"cu_lu_pivots_to_permutation|hip_lu_pivots_to_permutation|Eigh|LuDecomposition|Qr|"
    r"ProductOfElementaryHouseholderReflectors)$")
_FORBIDDEN_OPS = ("stablehlo.infeed", "stablehlo.outfeed", "stablehlo.send", "stablehlo.recv")
_TRACE_HINT = ("compute_reward must use jax.numpy (jnp) on its inputs: numpy calls, float()/bool() of an array and "
               "Python if/while on array values cannot be traced (use jnp.where)")


class ExportError(ValueError):
    """A program that cannot be exported or an artefact that fails the checks; `kind` is a FailureKind value."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind, self.reason = kind, reason


@dataclass(frozen=True)
class ExportedReward:
    """What the trainer receives for one reward program: serialised StableHLO and the component names."""

    hlo: bytes
    components: tuple[str, ...]
    obs_dim: int
    act_dim: int

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.hlo).hexdigest()[:16]


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
                 platforms: tuple[str, ...] = PLATFORMS) -> None:
        import jax
        from jax import export

        self.fields, self.names = [(str(n), int(s), int(k)) for n, s, k in fields], []

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

        (b,) = export.symbolic_shape("b")
        specs = [jax.ShapeDtypeStruct((b, d), np.float32) for d in (obs_dim, act_dim, obs_dim)]
        try:
            self.exported = export.export(jax.jit(flat), platforms=platforms)(*specs)
        except ExportError:
            raise
        except Exception as exc:  # noqa: BLE001 - any tracing failure of an untrusted program is a failure record
            raise ExportError("runtime_error", f"{_TRACE_HINT}. {type(exc).__name__}: {str(exc)[:240]}") from None
        self._call = jax.jit(self.exported.call)
        self.obs_dim, self.act_dim = obs_dim, act_dim

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


def _check_module(text: str) -> None:
    for name in set(re.findall(r"custom_call\s*@([\w.]+)", text)):
        if not _ALLOWED_CUSTOM_CALLS.match(name):
            raise ExportError("rejected", f"the exported program calls custom target {name!r}")
    for op in _FORBIDDEN_OPS:
        if op in text:
            raise ExportError("rejected", f"the exported program uses {op} (host communication)")


def load(prog: ExportedReward) -> Any:
    """Deserialise and check one program; returns a jax.export.Exported whose `call` the learner jits."""
    from jax import export

    try:
        exp = export.deserialize(bytearray(prog.hlo))
    except Exception as exc:  # noqa: BLE001 - corrupt bytes are this candidate's failure
        raise ExportError("bad_output", f"cannot deserialise the exported program: {type(exc).__name__}") from None
    ins = [(tuple(str(d) for d in a.shape), str(a.dtype)) for a in exp.in_avals]
    want = [(("b", str(prog.obs_dim)), "float32"), (("b", str(prog.act_dim)), "float32"),
            (("b", str(prog.obs_dim)), "float32")]
    outs = [(tuple(str(d) for d in a.shape), str(a.dtype)) for a in exp.out_avals]
    if ins != want or outs != [(("b", str(1 + len(prog.components))), "float32")]:
        raise ExportError("bad_output", f"exported signature {ins} -> {outs} does not match the task")
    if exp.ordered_effects or exp.unordered_effects or exp.nr_devices != 1:
        raise ExportError("rejected", "the exported program has side effects or spans several devices")
    if _platform() not in exp.platforms:
        raise ExportError("bad_output", f"exported for {exp.platforms}; the trainer runs on {_platform()}")
    _check_module(exp.mlir_module())
    return exp


def columns(exp: Any, obs: Any, act: Any, nxt: Any) -> Any:
    """[reward, *components] (B, 1 + C) float32 for float32 inputs of any batch size; call inside jit."""
    return exp.call(obs, act, nxt)
