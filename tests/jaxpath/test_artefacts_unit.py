"""bird/reward/artefacts.py in the test process: each check of an exported reward program, on artefacts built here.

`check_metadata` reads a flatbuffer: the artefacts are written field by field with the schema's generated builders
(jax's own), so each field can hold what a crafted artefact would (host memory, a symbolic dimension, a custom tree
node, effects, a derivative, ...). `check_module` reads a StableHLO module: genuine exports from jax.export, and
modules written as text (behind a stand-in holding the few fields the check reads) for what jax would never emit."""

from __future__ import annotations

import math
import types

import pytest

jax = pytest.importorskip("jax")

import flatbuffers  # noqa: E402 - jax's dependency, present with it
import jax.numpy as jnp  # noqa: E402
from jax import export  # noqa: E402
from jax._src.export import serialization_generated as fb  # noqa: E402

from bird.reward import artefacts  # noqa: E402
from bird.reward.artefacts import (  # noqa: E402
    MAX_ARTEFACT_BYTES,
    ArtefactError,
    Expected,
    check_metadata,
    check_module,
)

OBS, ACT, ROWS = 5, 2, 8
WANT = Expected(OBS, ACT, 1, ROWS)
IN_TREE = ("tuple", ("tuple", ("leaf",), ("leaf",), ("leaf",)), ("dict",))
KIND = {"leaf": fb.PyTreeDefKind.leaf, "none": fb.PyTreeDefKind.none, "tuple": fb.PyTreeDefKind.tuple,
        "list": fb.PyTreeDefKind.list, "dict": fb.PyTreeDefKind.dict, "custom": fb.PyTreeDefKind.custom}
F32 = (fb.AbstractValueKind.shapedArray, fb.DType.f32, fb.MemorySpace.Missing)


# -- artefacts written field by field ---------------------------------------------------------------------------
def _vector(b: flatbuffers.Builder, offsets: list[int]) -> int:
    b.StartVector(4, len(offsets), 4)
    for o in reversed(offsets):
        b.PrependUOffsetTRelative(o)
    return b.EndVector()


def _tree(b: flatbuffers.Builder, node: tuple) -> int:
    children = [_tree(b, c) for c in node[1:]]
    vec = _vector(b, children) if children else None
    fb.PyTreeDefStart(b)
    fb.PyTreeDefAddKind(b, KIND[node[0]])
    if vec is not None:
        fb.PyTreeDefAddChildren(b, vec)
    return fb.PyTreeDefEnd(b)


def _aval(b: flatbuffers.Builder, shape: tuple, kind: tuple = F32) -> int:
    dims = _vector(b, [b.CreateString(str(d)) for d in shape])
    fb.AbstractValueStart(b)
    fb.AbstractValueAddKind(b, kind[0])
    fb.AbstractValueAddShape(b, dims)
    fb.AbstractValueAddDtype(b, kind[1])
    fb.AbstractValueAddMemorySpace(b, kind[2])
    return fb.AbstractValueEnd(b)


def _table(b: flatbuffers.Builder, start, end, n: int) -> int:
    items = []
    for _ in range(n):
        start(b)
        items.append(end(b))
    return _vector(b, items)


def _exported(b: flatbuffers.Builder, ins=((ROWS, OBS), (ROWS, ACT), (ROWS, OBS)), outs=((ROWS, 2),), kinds=None,
              in_tree=IN_TREE, out_tree=("leaf",), platforms=("cpu",), nr_devices=1, nr_devices_short=None,
              ordered=0, unordered=0, disabled=0, in_shardings=0, out_shardings=0, name="main",
              module=b"\x00" * 80, kept=(0, 1, 2), vjp=False, kept_first=False) -> int:
    kinds = kinds or {}

    def kept_vector() -> int:
        b.StartVector(2, len(kept), 2)
        for k in reversed(kept):
            b.PrependUint16(k)
        return b.EndVector()

    kept_o = kept_vector() if kept_first else None  # written first: the last bytes of the buffer
    fun_name = b.CreateString(name)
    in_tree_o, out_tree_o = _tree(b, in_tree), _tree(b, out_tree)
    in_avals = _vector(b, [_aval(b, s, kinds.get(i, F32)) for i, s in enumerate(ins)])
    out_avals = _vector(b, [_aval(b, s, kinds.get("out", F32)) for s in outs])
    shard_in = _table(b, fb.ShardingStart, fb.ShardingEnd, in_shardings)
    shard_out = _table(b, fb.ShardingStart, fb.ShardingEnd, out_shardings)
    eff_o = _table(b, fb.EffectStart, fb.EffectEnd, ordered)
    eff_u = _table(b, fb.EffectStart, fb.EffectEnd, unordered)
    checks = _table(b, fb.DisabledSafetyCheckStart, fb.DisabledSafetyCheckEnd, disabled)
    plats = _vector(b, [b.CreateString(p) for p in platforms])
    mlir = b.CreateByteVector(module)
    kept_o = kept_vector() if kept_o is None else kept_o
    inner = _exported(b) if vjp else None
    fb.ExportedStart(b)
    fb.ExportedAddSerializationVersion(b, 3)
    fb.ExportedAddFunctionName(b, fun_name)
    fb.ExportedAddInTree(b, in_tree_o)
    fb.ExportedAddInAvals(b, in_avals)
    fb.ExportedAddOutTree(b, out_tree_o)
    fb.ExportedAddOutAvals(b, out_avals)
    if nr_devices is not None:
        fb.ExportedAddNrDevices(b, nr_devices)
    if nr_devices_short is not None:
        fb.ExportedAddNrDevicesShort(b, nr_devices_short)
    fb.ExportedAddInShardings(b, shard_in)
    fb.ExportedAddOutShardings(b, shard_out)
    fb.ExportedAddPlatforms(b, plats)
    fb.ExportedAddOrderedEffects(b, eff_o)
    fb.ExportedAddUnorderedEffects(b, eff_u)
    fb.ExportedAddDisabledChecks(b, checks)
    fb.ExportedAddMlirModuleSerialized(b, mlir)
    fb.ExportedAddModuleKeptVarIdx(b, kept_o)
    if inner is not None:
        fb.ExportedAddVjp(b, inner)
    return fb.ExportedEnd(b)


def artefact(**fields) -> bytes:
    """A serialised artefact whose metadata is right for WANT, but for `fields`."""
    b = flatbuffers.Builder(1024)
    b.Finish(_exported(b, **fields))
    return bytes(b.Output())


def refused(data, want: Expected = WANT) -> tuple[str, str]:
    with pytest.raises(ArtefactError) as err:
        check_metadata(data, want)
    assert err.value.args == (err.value.reason,)
    return err.value.kind, err.value.reason


# -- level 1: metadata ----------------------------------------------------------------------------------------
def test_what_a_task_expects_is_three_float32_inputs_and_one_output_of_its_rows():
    want = Expected(obs_dim=7, act_dim=3, components=4, rows=16)
    assert (want.obs_dim, want.act_dim, want.components, want.rows) == (7, 3, 4, 16)
    assert want.inputs == [(16, 7), (16, 3), (16, 7)] and want.output == (16, 5)
    assert want.describe() == "[(16, 7), (16, 3), (16, 7)] -> (16, 5) float32"


def test_metadata_written_as_the_task_expects_passes_and_names_its_platforms():
    assert check_metadata(artefact(), WANT) == ("cpu",)
    assert check_metadata(bytearray(artefact()), WANT) == ("cpu",)
    assert check_metadata(artefact(platforms=("cuda", "cpu")), WANT) == ("cuda", "cpu")
    assert check_metadata(artefact(in_shardings=3, out_shardings=1), WANT) == ("cpu",)
    assert check_metadata(artefact(nr_devices=None, nr_devices_short=1), WANT) == ("cpu",)
    kinds = {i: (fb.AbstractValueKind.shapedArray, fb.DType.f32, fb.MemorySpace.Device) for i in (0, 1, 2, "out")}
    assert check_metadata(artefact(kinds=kinds), WANT) == ("cpu",)


def test_a_genuine_jax_export_passes_the_metadata_check():
    args = [jax.ShapeDtypeStruct((ROWS, d), jnp.float32) for d in (OBS, ACT, OBS)]
    exp = export.export(jax.jit(lambda o, a, n: jnp.stack([o[:, 0], a[:, 1]], axis=1)), platforms=("cpu", "cuda"))(*args)
    assert check_metadata(bytes(exp.serialize()), WANT) == ("cpu", "cuda")


def test_an_artefact_outside_64_bytes_to_16_mib_or_not_bytes_is_refused_unread():
    assert refused("x" * 100) == ("bad_output", f"an artefact of 0 bytes (64 to {MAX_ARTEFACT_BYTES} expected)")
    assert refused(b"\0" * 63) == ("bad_output", f"an artefact of 63 bytes (64 to {MAX_ARTEFACT_BYTES} expected)")
    assert refused(bytearray(MAX_ARTEFACT_BYTES + 1)) == (
        "bad_output", f"an artefact of {MAX_ARTEFACT_BYTES + 1} bytes (64 to {MAX_ARTEFACT_BYTES} expected)")
    assert refused(b"\xff" * 64) == ("bad_output", "malformed artefact (error)")  # read (struct.error), not unread
    kind, reason = refused(b"\0" * MAX_ARTEFACT_BYTES)
    assert reason.startswith("the artefact has 0 inputs")


def test_an_artefact_of_another_arity_is_a_bad_output():
    assert refused(artefact(ins=((ROWS, OBS), (ROWS, ACT)))) == (
        "bad_output", "the artefact has 2 inputs and 1 outputs, expected 3 and 1")
    assert refused(artefact(outs=((ROWS, 2), (ROWS, 2)))) == (
        "bad_output", "the artefact has 3 inputs and 2 outputs, expected 3 and 1")


@pytest.mark.parametrize(("where", "label"), [(0, "input 0"), (2, "input 2"), ("out", "the output")])
def test_an_array_that_is_not_float32_or_lives_on_the_host_is_named(where, label):
    token = (fb.AbstractValueKind.abstractToken, fb.DType.f32, fb.MemorySpace.Missing)
    f64 = (fb.AbstractValueKind.shapedArray, fb.DType.f64, fb.MemorySpace.Missing)
    assert refused(artefact(kinds={where: token})) == ("bad_output", f"{label} is not a float32 array")
    assert refused(artefact(kinds={where: f64})) == ("bad_output", f"{label} is not a float32 array")
    for space in (fb.MemorySpace.Host, fb.MemorySpace.Any):
        kind = (fb.AbstractValueKind.shapedArray, fb.DType.f32, space)
        assert refused(artefact(kinds={where: kind})) == ("rejected", f"{label} lives in host memory")


def test_an_array_of_other_than_two_dimensions_is_a_bad_output():
    assert refused(artefact(ins=((ROWS,), (ROWS, ACT), (ROWS, OBS)))) == (
        "bad_output", "input 0 has 1 dimensions, expected 2")
    assert refused(artefact(outs=((ROWS, 2, 1),))) == ("bad_output", "the output has 3 dimensions, expected 2")


@pytest.mark.parametrize("dim", ["0", "08", "-8", "1000000000", "b", "2*b", "8 ", "", "a" * 40])
def test_a_dimension_that_is_not_a_plain_decimal_size_is_rejected(dim):
    kind, reason = refused(artefact(ins=((ROWS, OBS), (dim, ACT), (ROWS, OBS))))
    assert kind == "rejected"
    assert reason == f"input 1 has dimension {dim[:24]!r}: only a decimal size is allowed (no symbolic shapes)"


def test_a_nine_digit_dimension_is_read_as_its_size():
    kind, reason = refused(artefact(ins=((999999999, OBS), (ROWS, ACT), (ROWS, OBS))))
    assert (kind, reason) == ("bad_output", "the artefact's metadata says [(999999999, 5), (8, 2), (8, 5)] -> (8, 2); "
                                            f"the task needs {WANT.describe()}")
    assert check_metadata(artefact(ins=((999999999, OBS), (999999999, ACT), (999999999, OBS)),
                                   outs=((999999999, 2),)), Expected(OBS, ACT, 1, 999999999)) == ("cpu",)


@pytest.mark.parametrize("change", [dict(ins=((ROWS, OBS + 1), (ROWS, ACT), (ROWS, OBS))),
                                    dict(ins=((ROWS, OBS), (ROWS, ACT), (ROWS + 1, OBS))),
                                    dict(outs=((ROWS, 3),)), dict(outs=((ROWS + 1, 2),))])
def test_shapes_other_than_the_tasks_are_a_bad_output(change):
    kind, reason = refused(artefact(**change))
    assert kind == "bad_output" and reason.startswith("the artefact's metadata says [(")
    assert reason.endswith(f"; the task needs {WANT.describe()}")


@pytest.mark.parametrize("change", [dict(ordered=1), dict(unordered=1), dict(disabled=1), dict(nr_devices=2),
                                    dict(nr_devices=0), dict(nr_devices=None), dict(nr_devices=0, nr_devices_short=2),
                                    dict(vjp=True)])
def test_effects_disabled_checks_several_devices_or_a_derivative_are_rejected(change):
    assert refused(artefact(**change)) == ("rejected", "the artefact declares effects, disabled safety checks, several "
                                                       "devices or a derivative")


@pytest.mark.parametrize("platforms", [(), ("cpu", "cuda", "cpu"), ("rocm",), ("cpu", "tpu"),
                                       ("cpu", "cuda", "tpu", "rocm", "cpu")])
def test_platforms_other_than_one_or_two_of_cpu_and_cuda_are_a_bad_output(platforms):
    assert refused(artefact(platforms=platforms)) == (
        "bad_output", f"the artefact is lowered for {list(platforms)[:4]}; allowed: ['cpu', 'cuda']")


@pytest.mark.parametrize("change", [dict(in_shardings=1), dict(in_shardings=4), dict(out_shardings=2),
                                    dict(in_shardings=3, out_shardings=3)])
def test_shardings_that_do_not_match_the_arguments_are_rejected(change):
    assert refused(artefact(**change)) == ("rejected", "the artefact's shardings do not match its arguments")


@pytest.mark.parametrize("in_tree", [("tuple", ("tuple", ("leaf",), ("leaf",)), ("dict",)),
                                     ("tuple", ("list", ("leaf",), ("leaf",), ("leaf",)), ("dict",)),
                                     ("tuple", ("tuple", ("leaf",), ("leaf",), ("leaf",)), ("none",)),
                                     ("tuple", ("tuple", ("leaf",), ("leaf",), ("leaf",)))])
def test_an_argument_tree_other_than_obs_action_next_obs_is_a_bad_output(in_tree):
    assert refused(artefact(in_tree=in_tree)) == (
        "bad_output", "the artefact's argument tree is not (obs, action, next_obs)")
    assert refused(artefact(out_tree=("tuple", ("leaf",)))) == (
        "bad_output", "the artefact's argument tree is not (obs, action, next_obs)")


def _nested(depth: int) -> tuple:
    return ("leaf",) if depth == 0 else ("tuple", _nested(depth - 1))


def test_a_tree_of_at_most_16_nodes_8_children_and_depth_4_is_read_and_a_larger_one_rejected():
    larger = ("rejected", "the artefact's argument tree is larger than a reward's")
    not_ours = ("bad_output", "the artefact's argument tree is not (obs, action, next_obs)")
    eight = ("tuple", *[("leaf",)] * 8)
    assert refused(artefact(in_tree=eight)) == not_ours
    assert refused(artefact(in_tree=("tuple", *[("leaf",)] * 9))) == larger
    assert refused(artefact(in_tree=_nested(4))) == not_ours
    assert refused(artefact(in_tree=_nested(5))) == larger
    sixteen = ("tuple", ("tuple", *[("leaf",)] * 7), ("tuple", *[("leaf",)] * 6))
    assert refused(artefact(in_tree=sixteen)) == not_ours
    assert refused(artefact(in_tree=("tuple", ("tuple", *[("leaf",)] * 7), ("tuple", *[("leaf",)] * 7)))) == larger
    assert refused(artefact(out_tree=("tuple", ("tuple", *[("leaf",)] * 7), ("tuple", *[("leaf",)] * 7)))) == larger
    assert refused(artefact(in_tree=("tuple", ("custom",)))) == (
        "rejected", "the artefact's argument tree has a custom node")


def test_each_tree_gets_its_own_budget_of_16_nodes():
    # 14 nodes in, 1 out: within one budget of 16 each (and of 16 together: the output's budget is its own)
    tree = ("tuple", ("tuple", *[("leaf",)] * 6), ("tuple", *[("leaf",)] * 5))
    assert refused(artefact(in_tree=tree)) == ("bad_output", "the artefact's argument tree is not (obs, action, "
                                                             "next_obs)")
    sixteen_out = ("tuple", ("tuple", *[("leaf",)] * 7), ("tuple", *[("leaf",)] * 6))
    assert refused(artefact(out_tree=sixteen_out))[0] == "bad_output"


def test_a_function_name_over_200_bytes_is_rejected():
    assert check_metadata(artefact(name="f" * 200), WANT) == ("cpu",)
    assert refused(artefact(name="f" * 201)) == ("rejected", "the artefact's function name is longer than 200 bytes")


def _with_module_length(length: int) -> bytes:
    """An artefact whose module vector claims `length` bytes (its length prefix rewritten, the bytes unchanged)."""
    marker = b"MODULE-MARKER-" * 6
    data = bytearray(artefact(module=marker))
    at = data.index(marker) - 4
    assert int.from_bytes(data[at:at + 4], "little") == len(marker)
    data[at:at + 4] = length.to_bytes(4, "little")
    return bytes(data)


def test_a_module_claiming_more_than_16_mib_is_a_bad_output():
    assert refused(_with_module_length(MAX_ARTEFACT_BYTES + 1)) == ("bad_output", "the artefact's module is too large")
    assert check_metadata(_with_module_length(MAX_ARTEFACT_BYTES), WANT) == ("cpu",)


@pytest.mark.parametrize("kept", [(0, 1, 2, 2), (1, 0), (0, 0), (3,), (0, 1, 2, 0, 1), (2, 1, 0)])
def test_a_kept_argument_list_that_is_not_a_sorted_subset_of_the_inputs_is_a_bad_output(kept):
    assert refused(artefact(kept=kept)) == (
        "bad_output", "the artefact's kept-argument list is not a subset of its 3 inputs")


@pytest.mark.parametrize("kept", [(), (0,), (2,), (0, 2), (1, 2), (0, 1, 2)])
def test_a_sorted_subset_of_the_inputs_may_be_kept(kept):
    assert check_metadata(artefact(kept=kept), WANT) == ("cpu",)


def test_the_checks_run_in_order_and_the_first_failure_is_reported():
    assert refused(artefact(platforms=("tpu",), ordered=1))[1].startswith("the artefact declares effects")
    assert refused(artefact(platforms=("tpu",), in_shardings=1))[1].startswith("the artefact is lowered for")
    assert refused(artefact(in_shardings=1, in_tree=("leaf",)))[1].startswith("the artefact's shardings")
    assert refused(artefact(in_tree=("leaf",), name="f" * 300))[1].startswith("the artefact's argument tree")
    assert refused(artefact(name="f" * 300, kept=(3,)))[1].startswith("the artefact's function name")
    assert refused(artefact(outs=((ROWS, 3),), ordered=1))[1].startswith("the artefact's metadata says")


# -- level 2: the module --------------------------------------------------------------------------------------
def _export(fn, platforms=("cpu",)):
    args = [jax.ShapeDtypeStruct((ROWS, d), jnp.float32) for d in (OBS, ACT, OBS)]
    return export.export(jax.jit(fn), platforms=platforms)(*args)


def _reward(o, a, n):
    r = jnp.sum(n * n, axis=1) - 0.1 * jnp.sum(a * a, axis=1)
    return jnp.stack([r, 2 * r], axis=1)


def test_a_genuine_export_passes_and_its_operations_are_counted():
    counts = check_module(_export(_reward), WANT)
    assert counts["func.func"] == 1 and counts["builtin.module"] == 1 and counts["stablehlo.multiply"] >= 2
    assert check_module(_export(_reward, ("cpu", "cuda")), WANT)["func.func"] == 1  # the platform index argument
    assert check_module(_export(lambda o, a, n: jnp.stack([o[:, 0], o[:, 1]], axis=1)), WANT)["func.func"] == 1


def test_a_deserialised_signature_other_than_the_tasks_is_a_bad_output():
    exp = _export(_reward)
    with pytest.raises(ArtefactError) as err:
        check_module(exp, Expected(OBS, ACT, 2, ROWS))
    assert (err.value.kind, err.value.reason) == (
        "bad_output", f"deserialised signature [(8, 5), (8, 2), (8, 5)] -> [(8, 2)]; expected "
                      f"{Expected(OBS, ACT, 2, ROWS).describe()}")
    for want in (Expected(OBS + 1, ACT, 1, ROWS), Expected(OBS, ACT, 1, ROWS + 1)):
        with pytest.raises(ArtefactError, match="^deserialised signature"):
            check_module(exp, want)
    doubles = types.SimpleNamespace(**{**_stand_in(MAIN).__dict__, "out_avals": (_aval64(ROWS, 2),)})
    with pytest.raises(ArtefactError, match="^deserialised signature"):
        check_module(doubles, WANT)
    doubles = types.SimpleNamespace(**{**_stand_in(MAIN).__dict__,
                                       "in_avals": (_aval32(ROWS, OBS), _aval64(ROWS, ACT), _aval32(ROWS, OBS))})
    with pytest.raises(ArtefactError, match="^deserialised signature"):
        check_module(doubles, WANT)


def _aval32(*shape):
    return jax.core.ShapedArray(shape, jnp.float32)


def _aval64(*shape):
    return jax.core.ShapedArray(shape, jnp.int32)


MAIN = """
module @m {
  func.func public @main(%o: tensor<8x5xf32>, %a: tensor<8x2xf32>, %n: tensor<8x5xf32>) -> (tensor<8x2xf32>) {
    %0 = stablehlo.slice %o [0:8, 0:2] : (tensor<8x5xf32>) -> tensor<8x2xf32>
    BODY
    return %0 : tensor<8x2xf32>
  }
  EXTRA
}
"""


def _stand_in(text: str, platforms=("cpu",), kept=(0, 1, 2), body: str = "", extra: str = ""):
    """What check_module reads of an Exported, with `text` (BODY and EXTRA filled) as its module."""
    module = text.replace("BODY", body).replace("EXTRA", extra)
    return types.SimpleNamespace(in_avals=(_aval32(ROWS, OBS), _aval32(ROWS, ACT), _aval32(ROWS, OBS)),
                                 out_avals=(_aval32(ROWS, 2),), platforms=platforms, module_kept_var_idx=kept,
                                 mlir_module=lambda: module)


def rejected(exp, want: Expected = WANT) -> tuple[str, str]:
    with pytest.raises(ArtefactError) as err:
        check_module(exp, want)
    return err.value.kind, err.value.reason


def test_a_module_written_as_text_passes_and_every_operation_is_counted():
    helper = """func.func private @helper(%x: tensor<8x2xf32>) -> tensor<8x2xf32> {
    %y = stablehlo.add %x, %x : tensor<8x2xf32>
    return %y : tensor<8x2xf32>
  }"""
    nested = "func.func nested @inner() { return }"
    counts = check_module(_stand_in(MAIN, body="%1 = call @helper(%0) : (tensor<8x2xf32>) -> tensor<8x2xf32>",
                                    extra=helper + "\n" + nested), WANT)
    assert counts == {"stablehlo.slice": 1, "func.call": 1, "func.return": 3, "func.func": 3, "stablehlo.add": 1,
                      "builtin.module": 1}


def test_a_module_holding_anything_but_functions_at_top_level_is_rejected():
    extra = "stablehlo.constant dense<1.0> : tensor<f32>"
    assert rejected(_stand_in(MAIN, extra=extra)) == ("rejected", "the module holds 'stablehlo.constant' at top level")


@pytest.mark.parametrize("extra, text", [
    ("func.func public @other() { return }", MAIN),
    ("func.func @other() { return }", MAIN),  # no visibility: public
    ("", MAIN.replace("@main", "@start")),
    ("", MAIN.replace("public @main", "private @main")),
])
def test_a_module_without_exactly_one_public_function_named_main_is_rejected(extra, text):
    assert rejected(_stand_in(text, extra=extra)) == (
        "rejected", "the module must have exactly one public function, main")


def test_a_private_function_beside_main_is_allowed():
    assert check_module(_stand_in(MAIN, extra="func.func private @other() { return }"), WANT)["func.func"] == 2


def test_main_with_the_platform_index_and_only_the_kept_inputs_passes():
    two = MAIN.replace("@main(%o", "@main(%p: tensor<i32>, %o")
    assert check_module(_stand_in(two, platforms=("cpu", "cuda")), WANT)["func.func"] == 1
    assert rejected(_stand_in(two))[1].startswith("the module's real main is [((), 'i32'), ((8, 5), 'f32')")
    assert rejected(_stand_in(MAIN, platforms=("cpu", "cuda")))[1].startswith(
        "the module's real main is [((8, 5), 'f32'), ((8, 2), 'f32'), ((8, 5), 'f32')] -> [((8, 2), 'f32')]; its "
        "metadata and the task say [((), 'i32'), ((8, 5), 'f32'),")
    only_obs = MAIN.replace(", %a: tensor<8x2xf32>, %n: tensor<8x5xf32>", "")
    assert check_module(_stand_in(only_obs, kept=(0,)), WANT)["func.func"] == 1
    obs_next = MAIN.replace(", %a: tensor<8x2xf32>", "")
    assert check_module(_stand_in(obs_next, kept=(0, 2)), WANT)["func.func"] == 1
    assert rejected(_stand_in(obs_next, kept=(0, 1))) == (
        "bad_output", "the module's real main is [((8, 5), 'f32'), ((8, 5), 'f32')] -> [((8, 2), 'f32')]; its "
                      "metadata and the task say [((8, 5), 'f32'), ((8, 2), 'f32')] -> [((8, 2), 'f32')]")


@pytest.mark.parametrize("kept", [(1, 0), (0, 0), (0, 3), (0, 1, 2, 2, 2)])
def test_kept_inputs_that_are_not_a_sorted_subset_are_a_bad_output(kept):
    assert rejected(_stand_in(MAIN, kept=kept)) == (
        "bad_output", f"the artefact keeps inputs {list(kept)[:4]}, not a subset of 0, 1, 2")


@pytest.mark.parametrize("text", [
    MAIN.replace("-> (tensor<8x2xf32>)", "-> (tensor<8x2xf32>, tensor<8x2xf32>)").replace(
        "return %0 :", "return %0, %0 : tensor<8x2xf32>,"),
    MAIN.replace("%n: tensor<8x5xf32>", "%n: tensor<8x5xf16>"),
    MAIN.replace("%n: tensor<8x5xf32>", "%n: tensor<8x6xf32>"),
])
def test_a_real_main_other_than_its_metadata_says_is_a_bad_output(text):
    kind, reason = rejected(_stand_in(text))
    assert kind == "bad_output" and reason.startswith("the module's real main is ")
    assert reason.endswith("its metadata and the task say [((8, 5), 'f32'), ((8, 2), 'f32'), ((8, 5), 'f32')] -> "
                           "[((8, 2), 'f32')]")


@pytest.mark.parametrize("body, name, why", [
    ('%1 = stablehlo.custom_call @foo(%0) : (tensor<8x2xf32>) -> tensor<8x2xf32>', "stablehlo.custom_call",
     "a custom call: native code that trusts the shapes its caller declares"),
    ("%1 = stablehlo.optimization_barrier %0 : tensor<8x2xf32>", "stablehlo.optimization_barrier",
     "not a reward operation"),
    ("%1 = stablehlo.replica_id : tensor<ui32>", "stablehlo.replica_id", "several devices"),
    ("%1 = stablehlo.create_token : !stablehlo.token", "stablehlo.create_token", "a token"),
    ("%1 = arith.addf %0, %0 : tensor<8x2xf32>", "arith.addf", "not a StableHLO operation"),
    ("%1 = tensor.empty() : tensor<8x2xf32>", "tensor.empty", "not a StableHLO operation"),
])
def test_a_forbidden_or_foreign_operation_is_rejected_by_name(body, name, why):
    assert rejected(_stand_in(MAIN, body=body)) == ("rejected", f"the module uses {name} ({why})")


def test_every_operation_of_the_allowlist_pattern_is_matched_whole():
    assert artefacts._OPS.fullmatch("stablehlo.add") and artefacts._OPS.fullmatch("chlo.erf_inv")
    for name in ("func.func", "func.call", "func.return", "builtin.module", "stablehlo.dot_general2"):
        assert artefacts._OPS.fullmatch(name), name
    for name in ("func.constant", "builtin.unrealized_conversion_cast", "xstablehlo.add", "stablehlo.Add",
                 "stablehlo.", "mhlo.add", "func.funcs"):
        assert not artefacts._OPS.fullmatch(name), name


def test_only_the_first_refusal_is_reported_and_the_walk_stops_there():
    body = ("%1 = arith.addf %0, %0 : tensor<8x2xf32>\n"
            "    %2 = stablehlo.custom_call @foo(%0) : (tensor<8x2xf32>) -> tensor<8x2xf32>")
    assert rejected(_stand_in(MAIN, body=body)) == ("rejected", "the module uses arith.addf (not a StableHLO operation)")


def test_more_operations_than_the_cap_are_rejected(monkeypatch):
    exp = _stand_in(MAIN, body="%1 = stablehlo.add %0, %0 : tensor<8x2xf32>")
    counts = check_module(exp, WANT)
    monkeypatch.setattr(artefacts, "_MAX_OPS", sum(counts.values()))
    assert check_module(exp, WANT) == counts
    monkeypatch.setattr(artefacts, "_MAX_OPS", sum(counts.values()) - 1)
    assert rejected(exp) == ("rejected", f"the module has more than {sum(counts.values()) - 1:,} operations")
    monkeypatch.setattr(artefacts, "_MAX_OPS", 1234)
    many = "\n".join(f"%a{i} = stablehlo.add %0, %0 : tensor<8x2xf32>" for i in range(1240))
    assert rejected(_stand_in(MAIN, body=many)) == ("rejected", "the module has more than 1,234 operations")


@pytest.mark.parametrize("shape, ok", [
    ((65536, 32768), False), ((2**31 - 1,), True), ((2**31,), False), ((1, 1, 1, 1, 2**16, 2**16), False),
    ((2, 3, 4, 5, 6, 7, 8), True), ((0, 5), True), ((1, 1, 1, 1, 1, 2**16, 2**16), False)])
def test_a_tensor_of_more_than_2_to_31_minus_1_elements_is_rejected(shape, ok):
    dims = "x".join(map(str, shape))
    body = (f"%c = stablehlo.constant dense<1.0> : tensor<f32>\n"
            f"    %b = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<{dims}xf32>")
    exp = _stand_in(MAIN, body=body)
    if ok:
        assert check_module(exp, WANT)["stablehlo.broadcast_in_dim"] == 1
        assert math.prod(shape) <= artefacts._MAX_ELEMENTS
    else:
        assert rejected(exp) == ("rejected", f"stablehlo.broadcast_in_dim makes a tensor of shape {list(shape)[:6]}: "
                                             "dynamic, or more than 2,147,483,647 elements")


def test_a_tensor_of_dynamic_shape_is_rejected():
    body = ("%s = stablehlo.get_dimension_size %0, dim = 0 : (tensor<8x2xf32>) -> tensor<i32>\n"
            "    %r = stablehlo.reshape %s : (tensor<i32>) -> tensor<1xi32>\n"
            "    %d = stablehlo.dynamic_iota %r, dim = 0 : (tensor<1xi32>) -> tensor<?xf32>")
    assert rejected(_stand_in(MAIN, body=body)) == (
        "rejected", "stablehlo.dynamic_iota makes a tensor of shape "
                    f"[{jax._src.lib.mlir.ir.ShapedType.get_dynamic_size()}]: dynamic, or more than 2,147,483,647 "
                    "elements")


def test_a_result_that_is_not_a_ranked_tensor_is_not_measured():
    body = "%t = stablehlo.create_token : !stablehlo.token"
    # forbidden by name first; a token from after_all is forbidden too: no unranked result reaches the size check
    assert rejected(_stand_in(MAIN, body=body))[1] == "the module uses stablehlo.create_token (a token)"
    tuple_body = "%t = stablehlo.tuple %0, %0 : tuple<tensor<8x2xf32>, tensor<8x2xf32>>"
    assert check_module(_stand_in(MAIN, body=tuple_body), WANT)["stablehlo.tuple"] == 1


def test_an_artefact_error_carries_its_kind_and_reason():
    err = ArtefactError("rejected", "why")
    assert (err.kind, err.reason, str(err)) == ("rejected", "why", "why") and isinstance(err, ValueError)


REPLACED = "\ufffd"  # what decode("ascii", "replace") makes of each byte that is not ASCII


def test_a_name_or_dimension_that_is_not_ascii_is_shown_with_replacement_characters():
    assert refused(artefact(ins=((ROWS, OBS), ("８", ACT), (ROWS, OBS)))) == (
        "rejected", f"input 1 has dimension {REPLACED * 3!r}: only a decimal size is allowed (no symbolic shapes)")
    assert refused(artefact(platforms=("cpü",))) == (
        "bad_output", "the artefact is lowered for ['cp\ufffd\ufffd']; allowed: ['cpu', 'cuda']")


def test_only_the_first_four_platforms_are_read():
    data = bytearray(artefact(platforms=("plat1", "plat2", "plat3", "plat4", "plat5")))
    fifth = data.index(b"plat5") - 4  # its length prefix, where the vector's offset points
    [slot] = [j for j in range(0, len(data) - 4, 4) if j + int.from_bytes(data[j:j + 4], "little") == fifth]
    data[slot:slot + 4] = (0x7FFFFFF0).to_bytes(4, "little")  # the fifth name now lies outside the buffer
    assert refused(bytes(data)) == (
        "bad_output", "the artefact is lowered for ['plat1', 'plat2', 'plat3', 'plat4']; allowed: ['cpu', 'cuda']")


def test_a_kept_list_claiming_more_entries_than_it_holds_is_read_no_further_than_four():
    data = bytearray(artefact(kept=(0, 1, 2), kept_first=True))
    assert int.from_bytes(data[-12:-8], "little") == 3 and data[-8:-2] == bytes([0, 0, 1, 0, 2, 0])
    data[-12:-8] = (5).to_bytes(4, "little")  # entries 3 (the padding) and 4 (past the end) do not exist
    assert refused(bytes(data)) == (
        "bad_output", "the artefact's kept-argument list is not a subset of its 3 inputs")


def test_the_walk_stops_at_the_first_refused_operation(monkeypatch):
    looked_up = []

    class Recording(dict):
        def __contains__(self, name: object) -> bool:
            looked_up.append(name)
            return super().__contains__(name)

    monkeypatch.setattr(artefacts, "_FORBIDDEN", Recording(artefacts._FORBIDDEN))
    body = ("%1 = arith.addf %0, %0 : tensor<8x2xf32>\n"
            "    %2 = stablehlo.add %0, %0 : tensor<8x2xf32>")
    assert rejected(_stand_in(MAIN, body=body)) == ("rejected", "the module uses arith.addf (not a StableHLO operation)")
    assert looked_up == ["stablehlo.slice", "arith.addf"]
