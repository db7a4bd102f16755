"""Saved state as plain JSON (the checkpoint's format): data only, never code.

`encode` turns a tree of builtins, NumPy arrays and scalars, enums and registered classes into JSON-ready values;
`decode` rebuilds the same tree. Decoding runs no code chosen by the file: a class is rebuilt only when its name is
registered (`register_saved`), from its declared fields alone, without calling `__init__`, `__post_init__` or
`__setstate__`; arrays are raw bytes of a non-object dtype. Shared and cyclic references survive (an object seen
twice is written once and referred to), so a decoded state behaves as the saved one did: what pickle gave, without
pickle. Tagged values are objects with a "$" key; a plain dict holding that key is written as a list of pairs.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
from collections import Counter
from typing import Any

import numpy as np

__all__ = ["CodecError", "register_saved", "encode", "decode"]

_TYPES: dict[str, type] = {}
_ARRAY_KINDS = "biufcSUmM"  # no object ("O") or structured ("V") dtypes: they could hold references to code


class CodecError(ValueError):
    """A value that cannot be saved (an unregistered type), or a document that is not a saved state."""


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def register_saved(cls: type) -> type:
    """Allow instances of `cls` (a dataclass, saved field by field, or an Enum, saved by value) in saved state.
    Usable as a class decorator; a plugin registers its own state classes the same way."""
    if not (dataclasses.is_dataclass(cls) or issubclass(cls, enum.Enum)):
        raise TypeError(f"{_name(cls)} is neither a dataclass nor an Enum: only those can be saved")
    _TYPES[_name(cls)] = cls
    return cls


def _fields(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


# -- encode -------------------------------------------------------------------------------------------------------
_SHARED = (list, dict, set, np.ndarray)  # values whose identity is kept (with registered objects)


def _count(value: Any, seen: Counter[int], keep: list[Any]) -> None:
    """How often each shared value is reached (a second visit does not descend again)."""
    if not (isinstance(value, _SHARED + (tuple, frozenset)) or _name(type(value)) in _TYPES):
        return
    if not isinstance(value, (tuple, frozenset, enum.Enum)):
        seen[id(value)] += 1
        keep.append(value)  # ids stay valid while encoding
        if seen[id(value)] > 1:
            return
    if isinstance(value, dict):
        for k, v in value.items():
            _count(k, seen, keep)
            _count(v, seen, keep)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            _count(v, seen, keep)
    elif _name(type(value)) in _TYPES and not isinstance(value, enum.Enum):
        for v in vars(value).values():
            _count(v, seen, keep)


class _Encoder:
    def __init__(self, seen: Counter[int]) -> None:
        self.seen, self.refs = seen, {}  # id -> reference number, for values reached more than once

    def __call__(self, value: Any) -> Any:
        if value is None or isinstance(value, bool) or type(value) in (int, float, str):
            return value
        if isinstance(value, enum.Enum):
            return {"$": "enum", "type": self._registered(type(value)), "value": self(value.value)}
        if isinstance(value, np.generic):
            return {"$": "scalar", **self._array(np.asarray(value))}
        if type(value) is bytes:
            return {"$": "bytes", "b64": base64.b64encode(value).decode()}
        if type(value) is tuple:
            return {"$": "tuple", "items": [self(v) for v in value]}
        if type(value) is frozenset:
            return {"$": "frozenset", "items": [self(v) for v in value]}
        if id(value) in self.refs:
            return {"$": "ref", "to": self.refs[id(value)]}
        mark: dict[str, Any] = {}
        if self.seen[id(value)] > 1:
            self.refs[id(value)] = mark["#"] = len(self.refs)
        return self._shared(value, mark)

    def _shared(self, value: Any, mark: dict[str, Any]) -> Any:
        if type(value) is list:
            items = [self(v) for v in value]
            return {"$": "list", **mark, "items": items} if mark else items
        if type(value) is dict:
            if all(type(k) is str for k in value) and "$" not in value and not mark:
                return {k: self(v) for k, v in value.items()}
            return {"$": "dict", **mark, "items": [[self(k), self(v)] for k, v in value.items()]}
        if type(value) is set:
            return {"$": "set", **mark, "items": [self(v) for v in value]}
        if type(value) is np.ndarray:
            return {"$": "array", **mark, **self._array(value)}
        name = self._registered(type(value))
        state = vars(value)
        if extra := sorted(set(state) - set(_fields(type(value)))):
            raise CodecError(f"a {name} holds attributes that are not its fields: {extra}")
        return {"$": "object", **mark, "type": name, "fields": {k: self(v) for k, v in state.items()}}

    @staticmethod
    def _registered(cls: type) -> str:
        if _name(cls) not in _TYPES:
            raise CodecError(f"a {_name(cls)} cannot be saved: register its class with "
                             f"bird.state_codec.register_saved (registered: {sorted(_TYPES)})")
        return _name(cls)

    @staticmethod
    def _array(arr: np.ndarray) -> dict[str, Any]:
        if arr.dtype.kind not in _ARRAY_KINDS:
            raise CodecError(f"an array of dtype {arr.dtype} cannot be saved (kinds {_ARRAY_KINDS} only)")
        order = "F" if arr.flags.f_contiguous and not arr.flags.c_contiguous else "C"
        return {"dtype": arr.dtype.str, "shape": list(arr.shape), "order": order,
                "b64": base64.b64encode(arr.tobytes(order=order)).decode()}


def encode(value: Any) -> Any:
    """JSON-ready form of `value` (json.dumps writes it; NaN and infinities as JSON's NaN / Infinity tokens).

    Raises CodecError naming any value whose type is not registered."""
    seen: Counter[int] = Counter()
    keep: list[Any] = []
    _count(value, seen, keep)
    return _Encoder(seen)(value)


# -- decode -------------------------------------------------------------------------------------------------------
class _Decoder:
    def __init__(self) -> None:
        self.refs: dict[int, Any] = {}

    def __call__(self, doc: Any) -> Any:
        if doc is None or type(doc) in (bool, int, float, str):
            return doc
        if type(doc) is list:
            return [self(v) for v in doc]
        if type(doc) is not dict:
            raise CodecError(f"not a saved value: {type(doc).__name__}")
        tag = doc.get("$")
        if tag is None:
            return {k: self(v) for k, v in doc.items()}
        handlers = {"ref": self._ref, "list": self._list, "dict": self._dict, "set": self._set, "tuple": self._tuple,
                    "frozenset": self._frozenset, "bytes": _b64, "array": self._array, "scalar": self._scalar,
                    "enum": self._enum, "object": self._object}
        if not isinstance(tag, str) or tag not in handlers:
            raise CodecError(f"unknown tag {tag!r} (known: {sorted(handlers)})")
        return handlers[tag](doc)

    def _keep(self, doc: dict[str, Any], value: Any) -> Any:
        if "#" in doc:
            if type(doc["#"]) is not int or doc["#"] in self.refs:
                raise CodecError(f"bad reference number {doc['#']!r}")
            self.refs[doc["#"]] = value
        return value

    def _ref(self, doc: dict[str, Any]) -> Any:
        if doc.get("to") not in self.refs:
            raise CodecError(f"reference to {doc.get('to')!r} before it is defined")
        return self.refs[doc["to"]]

    def _items(self, doc: dict[str, Any]) -> list[Any]:
        items = doc.get("items")
        if type(items) is not list:
            raise CodecError(f"a {doc['$']} without a list of items")
        return items

    def _list(self, doc: dict[str, Any]) -> list[Any]:
        out: list[Any] = self._keep(doc, [])
        out.extend(self(v) for v in self._items(doc))
        return out

    def _dict(self, doc: dict[str, Any]) -> dict[Any, Any]:
        out: dict[Any, Any] = self._keep(doc, {})
        for pair in self._items(doc):
            if type(pair) is not list or len(pair) != 2:
                raise CodecError("a dict item that is not a [key, value] pair")
            out[self(pair[0])] = self(pair[1])
        return out

    def _set(self, doc: dict[str, Any]) -> set[Any]:
        out: set[Any] = self._keep(doc, set())
        out.update(self(v) for v in self._items(doc))
        return out

    def _tuple(self, doc: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(self(v) for v in self._items(doc))

    def _frozenset(self, doc: dict[str, Any]) -> frozenset[Any]:
        return frozenset(self(v) for v in self._items(doc))

    def _array(self, doc: dict[str, Any]) -> np.ndarray:
        return self._keep(doc, _array(doc))

    def _scalar(self, doc: dict[str, Any]) -> np.generic:
        return _array(doc)[()]

    def _enum(self, doc: dict[str, Any]) -> enum.Enum:
        cls = _registered(doc.get("type"))
        try:
            return cls(self(doc.get("value")))
        except (TypeError, ValueError) as exc:
            raise CodecError(f"{doc.get('type')}: {exc}") from None

    def _object(self, doc: dict[str, Any]) -> Any:
        cls = _registered(doc.get("type"))
        fields = doc.get("fields")
        if type(fields) is not dict:
            raise CodecError(f"{doc['type']} without a dict of fields")
        if issubclass(cls, enum.Enum):
            raise CodecError(f"{doc['type']} is an Enum, saved by value, not as an object")
        if extra := sorted(set(fields) - set(_fields(cls))):
            raise CodecError(f"{doc['type']} has no field(s) {extra}")
        obj = self._keep(doc, object.__new__(cls))
        state = {k: self(v) for k, v in fields.items()}
        for f in dataclasses.fields(cls):
            if f.name in state:
                continue
            if f.default is not dataclasses.MISSING:
                state[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                state[f.name] = f.default_factory()
            else:
                raise CodecError(f"{doc['type']} is missing its field {f.name!r}")
        obj.__dict__.update(state)
        return obj


def _registered(name: Any) -> type:
    if not isinstance(name, str) or name not in _TYPES:
        raise CodecError(f"type {name!r} is not one bird saves (registered: {sorted(_TYPES)})")
    return _TYPES[name]


def _b64(doc: dict[str, Any]) -> bytes:
    try:
        return base64.b64decode(doc["b64"], validate=True)
    except (KeyError, TypeError, ValueError):
        raise CodecError(f"a {doc.get('$')} without valid base64 bytes") from None


def _array(doc: dict[str, Any]) -> np.ndarray:
    try:
        dtype = np.dtype(str(doc["dtype"]))
        shape = tuple(int(n) for n in doc["shape"])
    except (KeyError, TypeError, ValueError):
        raise CodecError("an array without a valid dtype and shape") from None
    if dtype.kind not in _ARRAY_KINDS or dtype.fields is not None or doc.get("order") not in ("C", "F"):
        raise CodecError(f"an array of dtype {dtype} or order {doc.get('order')!r} is not saved state")
    data = _b64(doc)
    if any(n < 0 for n in shape) or int(np.prod(shape, dtype=object)) * dtype.itemsize != len(data):
        raise CodecError(f"array bytes ({len(data)}) do not match dtype {dtype} and shape {shape}")
    return np.frombuffer(data, dtype=dtype).reshape(shape, order=doc["order"]).copy(order="K")


def decode(doc: Any) -> Any:
    """The value `encode` was given. Raises CodecError for anything it did not write (an unregistered type, a
    malformed node); no code named by the document runs."""
    return _Decoder()(doc)
