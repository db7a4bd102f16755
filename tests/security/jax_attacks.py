"""Attacks on the JAX path (train.learner=jax_ppo), run through the real training path by jax_driver.py.

PROGRAMS: reward.language=jax programs as an attacker writes them. Each passes the static checks and the smoke
check's size and bites only at the training batch size (loops, sorts, allocations and shapes that grow with the
rows) or on states the smoke check does not reach. The training-size dry run in the reward worker must record
each as its own failure, under its time budget.

ARTEFACTS: what a compromised reward worker could send instead of its export (native code in the worker can send
any bytes): custom calls (LAPACK FFI kernels with caller-declared result shapes, the host-callback target), a module
whose real signature differs from its metadata, dimension strings for jax's symbolic-shape parser, fuzzed bytecode,
tokens and host communication, a tensor past int32 sizes, a foreign argument tree, several devices, a foreign
platform. The inspector must refuse each before any trainer loads it. LOOP passes every check (it is valid
StableHLO) and hangs the shared training step: the watchdog must fire and the culprit search must keep the others.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable

import numpy as np

HEAD = "import jax.numpy as jnp\nfrom jax import lax\n\n\ndef compute_reward(obs, action, next_obs, info):\n"
CLEAN = "    return next_obs['slider_vel'] - 1e-3 * jnp.sum(action ** 2, axis=-1), {}\n"

# name -> (body, the failure kinds allowed, words its recorded failure must contain)
PROGRAMS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "j01_while_loop_grows_with_rows": (
        "    n = action.shape[0]\n"
        "    inner = lambda j, v: v * 0.999 + action[0, 0]\n"
        "    mid = lambda i, v: lax.fori_loop(0, n, inner, v)\n"
        "    v = lax.fori_loop(0, n, lambda i, v: lax.fori_loop(0, n, mid, v), jnp.zeros(64))\n"
        "    return next_obs['slider_vel'] + 0.0 * v[0], {}\n", ("timeout",), "dry run"),
    "j02_loop_on_states_the_smoke_check_never_reaches": (
        "    n = action.shape[0]\n"
        "    fallen = jnp.any(next_obs['hinge_angle'] < -3.0)\n"
        "    inner = lambda j, v: v * 0.999 + 1.0\n"
        "    mid = lambda i, v: lax.fori_loop(0, n, inner, v)\n"
        "    spin = lambda v: lax.fori_loop(0, n, lambda i, v: lax.fori_loop(0, n, mid, v), v)\n"
        "    v = lax.cond(fallen, spin, lambda v: v, jnp.zeros(64))\n"
        "    return next_obs['slider_vel'] + 0.0 * v[0], {}\n", ("timeout",), "dry run"),
    "j03_sort_bomb_at_size": (
        "    x = jnp.tile(action[:, :1], (1, 64))\n"
        "    x = lax.fori_loop(0, action.shape[0], lambda i, x: jnp.sort(x + 1.0, axis=0), x)\n"
        "    return next_obs['slider_vel'] + 0.0 * x[:, 0], {}\n", ("timeout",), "dry run"),
    "j04_int32_shape_overflow_at_size": (
        "    n = action.shape[0]\n"
        "    cube = jnp.broadcast_to(action[:, :1, None], (n, n, n)).sum(axis=(1, 2))\n"
        "    return next_obs['slider_vel'] + 0.0 * cube, {}\n", ("timeout", "runtime_error", "rejected"), ""),
    "j05_quadratic_memory_at_size": (
        "    pairs = jnp.sort(jnp.outer(action[:, 0], next_obs['slider_vel']), axis=1)\n"
        "    return next_obs['slider_vel'] + 0.0 * pairs[:, 0], {}\n", ("timeout", "runtime_error"), ""),
}


# -- crafted artefacts ---------------------------------------------------------------------------------------------
def _export(fn: Callable, dims: tuple[int, int, int], disabled: tuple[str, ...] = (),
            platforms: tuple[str, ...] = ("cpu", "cuda")):
    import jax
    from jax import export

    specs = [jax.ShapeDtypeStruct((dims[0], d), np.float32) for d in dims[1:] + dims[1:2]]
    checks = [export.DisabledSafetyCheck.custom_call(t) for t in disabled]
    exp = export.export(jax.jit(fn), platforms=platforms, disabled_checks=checks)(*specs)
    return dataclasses.replace(exp, disabled_safety_checks=())  # the metadata no longer says so


def _good(o, a, n):
    import jax.numpy as jnp

    return jnp.stack([n[:, 3] - 1e-3 * jnp.sum(a ** 2, axis=-1)], axis=1)


def _lapack_lying_shapes(o, a, n):
    """LU of a (rows, 11, 11) batch, declaring results for a single 1 × 1 matrix: the CPU kernel writes past them."""
    import jax
    import jax.numpy as jnp

    m = o[:, :, None] * o[:, None, :] + jnp.eye(o.shape[1])
    lu, piv, info = jax.ffi.ffi_call("lapack_sgetrf_ffi", (jax.ShapeDtypeStruct((1, 1, 1), jnp.float32),
                                                            jax.ShapeDtypeStruct((1, 1), jnp.int32),
                                                            jax.ShapeDtypeStruct((1,), jnp.int32)))(m)
    return jnp.stack([n[:, 3] + lu[0, 0, 0]], axis=1)


def _host_callback(o, a, n):
    import jax
    import jax.numpy as jnp

    r = jax.ffi.ffi_call("xla_ffi_python_cpu_callback", jax.ShapeDtypeStruct(o.shape[:1], jnp.float32))(o[:, 0])
    return jnp.stack([r], axis=1)


def _loop_forever(o, a, n):
    import jax.numpy as jnp
    from jax import lax

    spin = lax.while_loop(lambda c: c[1] > -1.0, lambda c: (c[0] + 1, jnp.abs(c[1]) + 1.0), (0, n[0, 3]))
    return jnp.stack([n[:, 3] + 0.0 * spin[1]], axis=1)


def _huge_tensor(o, a, n):
    import jax.numpy as jnp

    return jnp.stack([jnp.broadcast_to(a[:, :1], (a.shape[0], 2**27)).sum(axis=1)], axis=1)


def _serialize_with_dims(exp, dims: list[str]) -> bytes:
    """Serialise with the first input's dimension strings replaced by `dims` (jax writes str(d) of each)."""
    from jax._src.export import serialization

    original, calls = serialization._serialize_aval, []

    def crafted(builder, aval):
        calls.append(aval)
        if len(calls) != 1:
            return original(builder, aval)
        fb = serialization.ser_flatbuf
        offsets = [builder.CreateString(d) for d in dims]
        fb.AbstractValueStartShapeVector(builder, len(offsets))
        for o in reversed(offsets):
            builder.PrependUOffsetTRelative(o)
        vec = builder.EndVector()
        fb.AbstractValueStart(builder)
        fb.AbstractValueAddKind(builder, fb.AbstractValueKind.shapedArray)
        fb.AbstractValueAddShape(builder, vec)
        fb.AbstractValueAddDtype(builder, fb.DType.f32)
        return fb.AbstractValueEnd(builder)

    serialization._serialize_aval = crafted
    try:
        return bytes(exp.serialize())
    finally:
        serialization._serialize_aval = original


def _fuzz(data: bytes, module: bytes, seed: int) -> bytes:
    """Random bytes overwritten inside the serialised MLIR module only: the metadata stays valid, so the bytes reach
    jax's deserialiser and the MLIR bytecode reader."""
    start = data.find(module)
    assert start > 0, "the module's bytes are not in the artefact"
    rng = random.Random(seed)
    out = bytearray(data)
    for _ in range(rng.randint(1, 24)):
        out[start + rng.randrange(8, len(module))] = rng.randrange(256)  # past the magic and version
    return bytes(out)


def artefacts(rows: int, obs_dim: int, act_dim: int) -> dict[str, tuple[bytes, tuple[str, ...]]]:
    """name -> (serialised artefact, component names) for a task of these sizes, exported for `rows` rows."""
    import jax
    from jax import tree_util

    dims = (rows, obs_dim, act_dim)
    good = _export(_good, dims)
    out: dict[str, tuple[bytes, tuple[str, ...]]] = {}
    out["a01_lapack_ffi_lying_result_shapes"] = (bytes(_export(_lapack_lying_shapes, dims, ("lapack_sgetrf_ffi",),
                                                                ("cpu",)).serialize()), ())
    out["a02_host_callback"] = (bytes(_export(_host_callback, dims, ("xla_ffi_python_cpu_callback",),
                                              ("cpu",)).serialize()), ())
    wider = _export(_good, (rows, obs_dim + 1, act_dim))
    out["a03_signature_differs_from_metadata"] = (bytes(dataclasses.replace(
        wider, in_avals=good.in_avals).serialize()), ())
    out["a04_symbolic_dimension_string"] = (_serialize_with_dims(good, ["b", str(obs_dim)]), ())
    out["a05_long_dimension_polynomial"] = (_serialize_with_dims(good, ["*".join(["b"] * 4000), str(obs_dim)]), ())
    out["a06_nested_dimension_string"] = (_serialize_with_dims(good, ["(" * 3000 + "b" + ")" * 3000,
                                                                      str(obs_dim)]), ())
    out["a07_dimension_digits_overflow"] = (_serialize_with_dims(good, ["9" * 4000, str(obs_dim)]), ())
    for seed in range(FUZZED):
        out[f"a08_fuzzed_bytecode_{seed:02d}"] = (_fuzz(bytes(good.serialize()), good.mlir_module_serialized, seed), ())
    out["a09_tensor_past_int32"] = (bytes(_export(_huge_tensor, dims).serialize()), ())
    tree = tree_util.tree_structure((((0.0, 0.0), 0.0), {}))
    out["a10_foreign_argument_tree"] = (bytes(dataclasses.replace(good, in_tree=tree).serialize()), ())
    out["a11_several_devices"] = (bytes(dataclasses.replace(good, nr_devices=2).serialize()), ())
    out["a12_foreign_platform"] = (bytes(dataclasses.replace(good, platforms=("tpu",)).serialize()), ())
    out["a13_truncated"] = (bytes(good.serialize())[:200], ())
    out["a14_barrier_op"] = (bytes(_export(lambda o, a, n: jax.lax.optimization_barrier(_good(o, a, n)),
                                           dims).serialize()), ())
    return out


FUZZED = 12
LOOP = "a99_valid_module_that_never_returns"


def loop_artefact(rows: int, obs_dim: int, act_dim: int) -> bytes:
    """Valid StableHLO with no forbidden operation: it passes the inspector and hangs the shared step."""
    return bytes(_export(_loop_forever, (rows, obs_dim, act_dim)).serialize())
