"""bird/state_codec.py: saved state is data. Each kind of value survives encode -> JSON -> decode with its type,
shared and cyclic references survive, and every malformed or unregistered document is a CodecError naming what is
wrong, with no code of the file's choosing run (the checkpoint round trip end to end: tests/security/
test_received_code.py)."""

from __future__ import annotations

import dataclasses
import enum
import json
from typing import Any

import numpy as np
import pytest

from bird.state_codec import CodecError, decode, encode, register_saved

CALLS: list[str] = []


@register_saved
class Colour(enum.Enum):
    RED = "red"
    BLUE = 2


@register_saved
@dataclasses.dataclass
class Node:
    name: str
    children: list[Any] = dataclasses.field(default_factory=list)
    weight: float = 0.5

    def __post_init__(self) -> None:
        CALLS.append("post_init")


class Unregistered:
    pass


def _trip(value: Any) -> Any:
    """encode -> JSON text -> decode, as a checkpoint file does."""
    return decode(json.loads(json.dumps(encode(value))))


def test_only_dataclasses_and_enums_can_be_registered():
    with pytest.raises(TypeError, match="Unregistered is neither a dataclass nor an Enum"):
        register_saved(Unregistered)
    assert register_saved(Node) is Node


@pytest.mark.parametrize("value", [None, True, False, 0, -7, 2 ** 70, 1.5, "text", "", "$", b"\x00\xffbytes", b""])
def test_plain_values_come_back_equal_and_of_the_same_type(value):
    back = _trip(value)
    assert back == value and type(back) is type(value)


def test_non_finite_floats_come_back():
    back = _trip([float("nan"), float("inf"), -float("inf")])
    assert np.isnan(back[0]) and back[1:] == [float("inf"), -float("inf")]


def test_containers_keep_their_types_and_contents():
    value = {"list": [1, [2, 3]], "tuple": (1, (2, "x")), "set": {1, 2}, "frozenset": frozenset({"a"}),
             "nested": {"k": {"j": None}}}
    back = _trip(value)
    assert back == value
    assert [type(back[k]) for k in ("list", "tuple", "set", "frozenset", "nested")] == [list, tuple, set, frozenset,
                                                                                         dict]
    assert type(back["tuple"][1]) is tuple


def test_dicts_with_keys_that_are_not_strings_or_that_hold_the_tag_key_come_back():
    for value in ({1: "a", (2, 3): "b", None: "c"}, {"$": "list", "items": [1]}, {"a": 1, 2: "b"}):
        back = _trip(value)
        assert back == value and list(back) == list(value)


def test_plain_string_keyed_dicts_and_lists_are_written_as_themselves():
    assert encode({"a": [1, "b", None]}) == {"a": [1, "b", None]}
    assert encode((1,)) == {"$": "tuple", "items": [1]}
    assert encode({"$": 1}) == {"$": "dict", "items": [["$", 1]]}
    assert encode(b"hi") == {"$": "bytes", "b64": "aGk="}


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int64", "float32", "float64", "complex128", "S3", "U2",
                                   "datetime64[s]", "timedelta64[ms]"])
def test_arrays_of_every_saved_kind_come_back_with_their_dtype_shape_and_values(dtype):
    arr = np.arange(6).reshape(2, 3).astype(dtype)
    back = _trip(arr)
    assert back.dtype == arr.dtype and back.shape == (2, 3) and np.array_equal(back, arr)
    assert back.flags.writeable


def test_a_fortran_ordered_array_keeps_its_values_and_order():
    arr = np.asfortranarray(np.arange(6, dtype=float).reshape(2, 3))
    doc = encode(arr)
    assert doc["order"] == "F"
    back = _trip(arr)
    assert np.array_equal(back, arr) and back.flags.f_contiguous and not back.flags.c_contiguous
    assert encode(np.arange(3))["order"] == "C" and encode(np.zeros((1, 1)))["order"] == "C"


def test_numpy_scalars_come_back_as_scalars_of_their_type():
    for scalar in (np.float32(1.5), np.int64(-3), np.bool_(True)):
        back = _trip(scalar)
        assert type(back) is type(scalar) and back == scalar


def test_enums_come_back_as_their_members():
    assert _trip([Colour.RED, Colour.BLUE]) == [Colour.RED, Colour.BLUE]
    assert encode(Colour.BLUE)["value"] == 2


def test_a_registered_object_is_rebuilt_from_its_fields_without_running_its_code():
    CALLS.clear()
    node = Node("root", [Node("leaf")], weight=2.0)
    CALLS.clear()
    back = _trip(node)
    assert CALLS == [] and back == node and type(back.children[0]) is Node


def test_a_shared_value_is_written_once_and_comes_back_shared():
    shared, arr = [1, 2], np.zeros(2)
    value = {"a": shared, "b": shared, "c": arr, "d": arr, "e": (shared,)}
    doc = encode(value)
    assert doc["a"] == {"$": "list", "#": 0, "items": [1, 2]} and doc["b"] == {"$": "ref", "to": 0}
    back = _trip(value)
    assert back["a"] is back["b"] is back["e"][0] and back["c"] is back["d"]
    back["a"].append(3)
    assert back["b"] == [1, 2, 3]


def test_shared_sets_dicts_and_objects_come_back_shared():
    s, d, n = {1}, {"k": 1}, Node("x")
    back = _trip([s, s, d, d, n, n])
    assert back[0] is back[1] and back[2] is back[3] and back[4] is back[5]
    assert back[0] == {1} and back[2] == {"k": 1} and back[4] == Node("x")


def test_cycles_through_lists_dicts_and_objects_come_back():
    loop: list[Any] = [1]
    loop.append(loop)
    back = _trip(loop)
    assert back[1] is back
    node = Node("self")
    node.children.append(node)
    back = _trip(node)
    assert back.children[0] is back
    d: dict[str, Any] = {}
    d["me"] = d
    back = _trip(d)
    assert back["me"] is back


def test_values_reached_once_get_no_reference_number():
    doc = encode([[1], [2], {"a": [3]}])
    assert "#" not in json.dumps(doc)


@pytest.mark.parametrize(("value", "says"), [
    (Unregistered(), "Unregistered cannot be saved: register its class"),
    ([1, {"k": Unregistered()}], "Unregistered cannot be saved"),
    (np.array([object()]), "dtype object cannot be saved"),
    (np.zeros(2, dtype=[("a", "i4")]), "cannot be saved"),
    (np.array([1 + 0j], dtype=object), "dtype object"),
    (lambda: 0, "function cannot be saved"),
])
def test_a_value_bird_does_not_save_is_refused_naming_its_type(value, says):
    with pytest.raises(CodecError, match=says):
        encode(value)


def test_an_object_holding_attributes_that_are_not_its_fields_is_refused():
    node = Node("x")
    node.extra = 1  # type: ignore[attr-defined]
    with pytest.raises(CodecError, match=r"holds attributes that are not its fields: \['extra'\]"):
        encode(node)


NODE = f"{Node.__module__}.{Node.__qualname__}"
COLOUR = f"{Colour.__module__}.{Colour.__qualname__}"
ARRAY = {"$": "array", "dtype": "<f8", "shape": [2], "order": "C", "b64": "AAAAAAAAAAAAAAAAAAAAAA=="}


@pytest.mark.parametrize(("doc", "says"), [
    ((1, 2), "not a saved value: tuple"),
    ({"$": "code", "items": []}, "unknown tag 'code'"),
    ({"$": 3}, "unknown tag 3"),
    ({"$": "ref", "to": 0}, "reference to 0 before it is defined"),
    ({"$": "list", "items": {"a": 1}}, "a list without a list of items"),
    ({"$": "set"}, "a set without a list of items"),
    ({"$": "list", "#": "0", "items": []}, "bad reference number '0'"),
    ([{"$": "list", "#": 0, "items": []}, {"$": "list", "#": 0, "items": []}], "bad reference number 0"),
    ({"$": "dict", "items": [[1, 2, 3]]}, "a dict item that is not a"),
    ({"$": "dict", "items": ["ab"]}, "a dict item that is not a"),
    ({"$": "object", "type": "os.system", "fields": {}}, "type 'os.system' is not one bird saves"),
    ({"$": "object", "type": ["x"], "fields": {}}, r"type \['x'\] is not one bird saves"),
    ({"$": "object", "type": NODE, "fields": []}, "without a dict of fields"),
    ({"$": "object", "type": COLOUR, "fields": {}}, "is an Enum, saved by value"),
    ({"$": "object", "type": NODE, "fields": {"name": "x", "__class__": 1}}, r"has no field\(s\) \['__class__'\]"),
    ({"$": "object", "type": NODE, "fields": {"weight": 1.0}}, "is missing its field 'name'"),
    ({"$": "enum", "type": COLOUR, "value": "green"}, "'green' is not a valid Colour"),
    ({"$": "enum", "type": NODE + "X", "value": 1}, "is not one bird saves"),
    ({"$": "bytes", "b64": "not base64!"}, "a bytes without valid base64 bytes"),
    ({"$": "bytes"}, "a bytes without valid base64"),
    ({"$": "bytes", "b64": 5}, "a bytes without valid base64"),
    ({**ARRAY, "dtype": "|O"}, "dtype object"),
    ({**ARRAY, "dtype": [["a", "<i4"]]}, "without a valid dtype"),
    ({**ARRAY, "dtype": "V8"}, "dtype \\|V8"),
    ({**ARRAY, "dtype": "not a dtype"}, "without a valid dtype and shape"),
    ({**ARRAY, "shape": "ab"}, "without a valid dtype and shape"),
    ({**ARRAY, "shape": None}, "without a valid dtype and shape"),
    ({**ARRAY, "order": "K"}, "order 'K' is not saved state"),
    ({key: v for key, v in ARRAY.items() if key != "order"}, "order None"),
    ({**ARRAY, "shape": [3]}, r"array bytes \(16\) do not match dtype float64 and shape \(3,\)"),
    ({**ARRAY, "shape": [-2, -1]}, "do not match"),
    ({**ARRAY, "$": "scalar", "shape": []}, "do not match"),
])
def test_a_document_bird_did_not_write_is_refused_naming_what_is_wrong(doc, says):
    with pytest.raises(CodecError, match=says):
        decode(doc)


def test_an_object_missing_fields_with_defaults_gets_its_defaults_not_shared_ones():
    a = decode({"$": "object", "type": NODE, "fields": {"name": "a"}})
    b = decode({"$": "object", "type": NODE, "fields": {"name": "b"}})
    assert (a.children, a.weight) == ([], 0.5) and a.children is not b.children


def test_a_valid_array_document_decodes():
    assert np.array_equal(decode(ARRAY), np.zeros(2)) and decode({**ARRAY, "shape": ["2"]}).shape == (2,)


@pytest.mark.parametrize(("doc", "message"), [
    ({**ARRAY, "shape": None}, "an array without a valid dtype and shape"),
    ({"$": "dict", "items": [[1]]}, "a dict item that is not a [key, value] pair"),
    ({"$": "enum", "type": COLOUR, "value": "green"}, f"{COLOUR}: 'green' is not a valid Colour"),
])
def test_a_refusal_says_exactly_what_is_wrong(doc, message):
    with pytest.raises(CodecError) as err:
        decode(doc)
    assert str(err.value) == message


def test_base64_with_characters_outside_its_alphabet_is_refused_not_skipped():
    assert decode({"$": "bytes", "b64": "QUJD"}) == b"ABC"
    with pytest.raises(CodecError, match="a bytes without valid base64 bytes"):
        decode({"$": "bytes", "b64": "QU!JD"})


def test_empty_arrays_come_back_with_their_shape():
    for shape in [(0,), (2, 0), (0, 3)]:
        back = _trip(np.zeros(shape, dtype=np.int16))
        assert back.shape == shape and back.dtype == np.int16


def test_a_shape_whose_size_overflows_64_bits_is_refused_not_wrapped_to_the_bytes_given():
    # 2**32 * 2**32 elements wrap to 0 in int64: as many as the empty bytes given, if the size were not exact
    with pytest.raises(CodecError, match=r"array bytes \(0\) do not match"):
        decode({**ARRAY, "shape": [2**32, 2**32], "b64": ""})


def test_a_value_inside_a_shared_one_but_reached_once_gets_no_reference_number():
    shared = [[1]]
    doc = encode([shared, shared])
    assert doc[0] == {"$": "list", "#": 0, "items": [[1]]} and doc[1] == {"$": "ref", "to": 0}


@register_saved
@dataclasses.dataclass(frozen=True)
class Key:
    name: str


def test_a_registered_object_used_as_a_dict_key_and_a_value_comes_back_one_object():
    key = Key("k")
    back = _trip({key: 1, "same": key})
    [got] = [k for k in back if isinstance(k, Key)]
    assert got == Key("k") and back["same"] is got


def test_a_class_registered_at_run_time_is_saved_and_rebuilt(monkeypatch):
    import bird.state_codec as codec

    monkeypatch.setattr(codec, "_TYPES", dict(codec._TYPES))

    @dataclasses.dataclass
    class Later:
        x: int

    assert register_saved(Later) is Later
    back = _trip(Later(3))
    assert type(back) is Later and back.x == 3
