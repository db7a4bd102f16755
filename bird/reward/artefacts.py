"""Checks of an exported reward program (serialised `jax.export` StableHLO), which is untrusted input.

Two levels, both exact (the artefact's shape is fully known: three float32 inputs of `rows` rows, one float32
output of `rows` × (1 + components)):
- `check_metadata`: the flatbuffer's fields read with its generated accessors, before jax's own deserialiser sees the
  bytes: sizes, platforms, effects, trees and every dimension string (decimal digits only, the expected value),
  so no crafted symbolic-shape string reaches jax's parser.
- `check_module`: the StableHLO module itself (after deserialisation): its real `main` signature against the
  metadata, and every operation against an allowlist, with no custom call of any kind (a reward needs none; the
  LAPACK FFI kernels trust caller-declared result shapes) and no host or device communication.
The inspector (bird/reward/inspector.py) runs both in a throwaway isolated process; the trainer repeats the first.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["ArtefactError", "Expected", "check_metadata", "check_module", "MAX_ARTEFACT_BYTES", "MAX_ROWS",
           "ALLOWED_PLATFORMS"]

MAX_ARTEFACT_BYTES = 16 * 2**20
MAX_ROWS = 1 << 24  # rows of one call: obs (rows, D) float32 stays far below 2**31 elements for D < 128
ALLOWED_PLATFORMS = ("cpu", "cuda")
_DIGITS = re.compile(r"[1-9][0-9]{0,8}")
_OPS = re.compile(r"(stablehlo|chlo)\.[a-z_0-9]+|func\.(func|call|return)|builtin\.module")
_FORBIDDEN = {  # allowed by the dialect pattern above, but never in a reward
    "stablehlo.custom_call": "a custom call: native code that trusts the shapes its caller declares",
    "stablehlo.infeed": "host communication", "stablehlo.outfeed": "host communication",
    "stablehlo.send": "host communication", "stablehlo.recv": "host communication",
    "stablehlo.after_all": "a token (host communication)", "stablehlo.create_token": "a token",
    "stablehlo.all_gather": "collectives (several devices)", "stablehlo.all_reduce": "collectives",
    "stablehlo.all_to_all": "collectives", "stablehlo.collective_permute": "collectives",
    "stablehlo.collective_broadcast": "collectives", "stablehlo.reduce_scatter": "collectives",
    "stablehlo.partition_id": "several devices", "stablehlo.replica_id": "several devices",
    "stablehlo.optimization_barrier": "not a reward operation",
}
_MAX_OPS = 200_000
_MAX_ELEMENTS = 2**31 - 1  # XLA indexes with int32 on some paths: a larger tensor is an overflow, not a reward


class ArtefactError(ValueError):
    """The artefact fails a check; `kind` is a FailureKind value ("rejected" or "bad_output")."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason)
        self.kind, self.reason = kind, reason


class Expected:
    """What the artefact must be: `rows` rows of obs (obs_dim), action (act_dim), next_obs in; `rows` ×
    (1 + components) out; all float32."""

    def __init__(self, obs_dim: int, act_dim: int, components: int, rows: int) -> None:
        self.obs_dim, self.act_dim, self.components, self.rows = obs_dim, act_dim, components, rows
        self.inputs = [(rows, obs_dim), (rows, act_dim), (rows, obs_dim)]
        self.output = (rows, 1 + components)

    def describe(self) -> str:
        return f"{self.inputs} -> {self.output} float32"


# -- level 1: the flatbuffer, before jax's deserialiser -------------------------------------------------------
def _fb() -> Any:
    """The flatbuffer schema's generated accessors (pure Python, part of jax)."""
    from jax._src.export import serialization_generated as fb

    return fb


def _shape(aval: Any, fb: Any, what: str) -> tuple[int, ...]:
    if aval.Kind() != fb.AbstractValueKind.shapedArray or aval.Dtype() != fb.DType.f32:
        raise ArtefactError("bad_output", f"{what} is not a float32 array")
    if aval.MemorySpace() not in (fb.MemorySpace.Missing, fb.MemorySpace.Device):
        raise ArtefactError("rejected", f"{what} lives in host memory")
    n = aval.ShapeLength()
    if n != 2:
        raise ArtefactError("bad_output", f"{what} has {n} dimensions, expected 2")
    dims = []
    for i in range(2):
        raw = aval.Shape(i)
        text = raw.decode("ascii", "replace") if isinstance(raw, bytes) else str(raw)
        if not _DIGITS.fullmatch(text):
            raise ArtefactError("rejected", f"{what} has dimension {text[:24]!r}: only a decimal size is allowed "
                                            "(no symbolic shapes)")
        dims.append(int(text))
    return tuple(dims)


def _tree(node: Any, fb: Any, budget: list[int], depth: int = 0) -> Any:
    """The pytree structure as nested tuples of kind names; at most 16 nodes and depth 4."""
    budget[0] -= 1
    if budget[0] < 0 or depth > 4:
        raise ArtefactError("rejected", "the artefact's argument tree is larger than a reward's")
    kinds = {fb.PyTreeDefKind.leaf: "leaf", fb.PyTreeDefKind.tuple: "tuple", fb.PyTreeDefKind.dict: "dict",
             fb.PyTreeDefKind.list: "list", fb.PyTreeDefKind.none: "none"}
    kind = kinds.get(node.Kind())
    if kind is None:
        raise ArtefactError("rejected", "the artefact's argument tree has a custom node")
    n = node.ChildrenLength()
    if n > 8:
        raise ArtefactError("rejected", "the artefact's argument tree is larger than a reward's")
    return (kind, *(_tree(node.Children(i), fb, budget, depth + 1) for i in range(n)))


_IN_TREE = ("tuple", ("tuple", ("leaf",), ("leaf",), ("leaf",)), ("dict",))
_OUT_TREE = ("leaf",)


def check_metadata(data: bytes, want: Expected) -> tuple[str, ...]:
    """Check the serialised artefact's metadata without jax's deserialiser; returns its platforms."""
    if not isinstance(data, bytes | bytearray) or not 64 <= len(data) <= MAX_ARTEFACT_BYTES:
        raise ArtefactError("bad_output", f"an artefact of {len(data) if isinstance(data, bytes | bytearray) else 0}"
                                          f" bytes (64 to {MAX_ARTEFACT_BYTES} expected)")
    fb = _fb()
    try:
        exp = fb.Exported.GetRootAsExported(bytearray(data), 0)
        if exp.InAvalsLength() != 3 or exp.OutAvalsLength() != 1:
            raise ArtefactError("bad_output", f"the artefact has {exp.InAvalsLength()} inputs and "
                                              f"{exp.OutAvalsLength()} outputs, expected 3 and 1")
        ins = [_shape(exp.InAvals(i), fb, f"input {i}") for i in range(3)]
        out = _shape(exp.OutAvals(0), fb, "the output")
        if ins != want.inputs or out != want.output:
            raise ArtefactError("bad_output", f"the artefact's metadata says {ins} -> {out}; the task needs "
                                              f"{want.describe()}")
        if (exp.OrderedEffectsLength() or exp.UnorderedEffectsLength() or exp.DisabledChecksLength()
                or (exp.NrDevices() or exp.NrDevicesShort()) != 1 or exp.Vjp() is not None):
            raise ArtefactError("rejected", "the artefact declares effects, disabled safety checks, several "
                                            "devices or a derivative")
        n = exp.PlatformsLength()
        platforms = tuple(exp.Platforms(i).decode("ascii", "replace") for i in range(min(n, 4)))
        if not 1 <= n <= len(ALLOWED_PLATFORMS) or not set(platforms) <= set(ALLOWED_PLATFORMS):
            raise ArtefactError("bad_output", f"the artefact is lowered for {list(platforms)[:4]}; allowed: "
                                              f"{list(ALLOWED_PLATFORMS)}")
        if exp.InShardingsLength() not in (0, 3) or exp.OutShardingsLength() not in (0, 1):
            raise ArtefactError("rejected", "the artefact's shardings do not match its arguments")
        if _tree(exp.InTree(), fb, [16]) != _IN_TREE or _tree(exp.OutTree(), fb, [16]) != _OUT_TREE:
            raise ArtefactError("bad_output", "the artefact's argument tree is not (obs, action, next_obs)")
        if len(exp.FunctionName() or b"") > 200:
            raise ArtefactError("rejected", "the artefact's function name is longer than 200 bytes")
        if exp.MlirModuleSerializedLength() > MAX_ARTEFACT_BYTES:
            raise ArtefactError("bad_output", "the artefact's module is too large")
        kept = [int(exp.ModuleKeptVarIdx(i)) for i in range(min(exp.ModuleKeptVarIdxLength(), 4))]
        if exp.ModuleKeptVarIdxLength() > 3 or kept != sorted(set(kept)) or not set(kept) <= {0, 1, 2}:
            raise ArtefactError("bad_output", "the artefact's kept-argument list is not a subset of its 3 inputs")
    except ArtefactError:
        raise
    except Exception as exc:  # noqa: BLE001 - offsets out of range, bad UTF-8, ...: a malformed buffer
        raise ArtefactError("bad_output", f"malformed artefact ({type(exc).__name__})") from None
    return platforms


# -- level 2: the StableHLO module, after deserialisation ---------------------------------------------------
def _tensor(t: Any, ir: Any) -> tuple[tuple[int, ...], str]:
    rt = ir.RankedTensorType(t)
    return tuple(int(d) for d in rt.shape), str(rt.element_type)


def check_module(exp: Any, want: Expected) -> dict[str, int]:
    """Check a deserialised jax.export.Exported: its avals and its module's real `main` against `want`, every
    operation against the allowlist. Returns {op name: count}. Call in a throwaway process: it parses the module."""
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    ins = [tuple(int(d) for d in a.shape) for a in exp.in_avals]
    outs = [tuple(int(d) for d in a.shape) for a in exp.out_avals]
    if ins != want.inputs or outs != [want.output] or any(str(a.dtype) != "float32" for a in
                                                          (*exp.in_avals, *exp.out_avals)):
        raise ArtefactError("bad_output", f"deserialised signature {ins} -> {outs}; expected {want.describe()}")
    counts: dict[str, int] = {}
    with mlir.make_ir_context():
        module = ir.Module.parse(exp.mlir_module())
        publics = []
        for op in module.body.operations:
            if op.operation.name != "func.func":
                raise ArtefactError("rejected", f"the module holds {op.operation.name!r} at top level")
            visibility = op.attributes["sym_visibility"] if "sym_visibility" in op.attributes else None  # noqa: SIM401
            if visibility is None or str(visibility) == '"public"':
                publics.append(op)
        if len(publics) != 1 or str(publics[0].attributes["sym_name"]) != '"main"':
            raise ArtefactError("rejected", "the module must have exactly one public function, main")
        ftype = ir.FunctionType(ir.TypeAttr(publics[0].attributes["function_type"]).value)
        params = [_tensor(t, ir) for t in ftype.inputs]
        results = [_tensor(t, ir) for t in ftype.results]
        platform_arg = [((), "i32")] if len(exp.platforms) > 1 else []
        kept = tuple(exp.module_kept_var_idx)  # jax drops the inputs a program never reads
        if kept != tuple(sorted(set(kept))) or not set(kept) <= {0, 1, 2}:
            raise ArtefactError("bad_output", f"the artefact keeps inputs {list(kept)[:4]}, not a subset of 0, 1, 2")
        expected_params = platform_arg + [(want.inputs[i], "f32") for i in kept]
        if params != expected_params or results != [(want.output, "f32")]:
            raise ArtefactError("bad_output", f"the module's real main is {params} -> {results}; its metadata and "
                                              f"the task say {expected_params} -> {[(want.output, 'f32')]}")

        refused: list[str] = []

        def visit(op: Any) -> Any:  # an exception raised here would come back wrapped: record and stop instead
            name = op.name
            counts[name] = counts.get(name, 0) + 1
            if name in _FORBIDDEN or not _OPS.fullmatch(name):
                refused.append(f"the module uses {name} ({_FORBIDDEN.get(name, 'not a StableHLO operation')})")
            elif sum(counts.values()) > _MAX_OPS:
                refused.append(f"the module has more than {_MAX_OPS:,} operations")
            else:
                for result in op.results:
                    if result.type.typeid == ir.RankedTensorType.static_typeid:
                        shape = ir.RankedTensorType(result.type).shape
                        if any(d < 0 for d in shape) or math.prod(shape) > _MAX_ELEMENTS:
                            refused.append(f"{name} makes a tensor of shape {list(shape)[:6]}: dynamic, or more "
                                           f"than {_MAX_ELEMENTS:,} elements")
                            break
            return ir.WalkResult.INTERRUPT if refused else ir.WalkResult.ADVANCE

        module.operation.walk(visit)
        if refused:
            raise ArtefactError("rejected", refused[0])
    return counts
