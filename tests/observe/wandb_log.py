"""Read a W&B offline run file (run-<id>.wandb) back: a LevelDB-style log of protobuf Records.

wandb >= 0.2x ships no Python reader, so the tests parse the documented format themselves: a 7-byte header
(":W&B", magic 0xBEE1, version 0), then 32 KiB blocks of chunks, each with a 7-byte header (CRC-32C, length,
type: 1 full, 2 first, 3 middle, 4 last)."""

from __future__ import annotations

import struct
from pathlib import Path

from wandb.proto import wandb_internal_pb2 as pb

_BLOCK = 32 * 1024


def read_records(path: Path) -> list[pb.Record]:
    data = Path(path).read_bytes()
    assert data[:4] == b":W&B", "not a W&B run file"
    pos, records, parts = 7, [], b""
    while pos + 7 <= len(data):
        room = _BLOCK - pos % _BLOCK
        if room < 7:  # block trailer too short for a chunk header: skip to the next block
            pos += room
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        if length == 0 and kind == 0:
            pos += room
            continue
        chunk = data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        parts = chunk if kind in (1, 2) else parts + chunk
        if kind in (1, 4):
            rec = pb.Record()
            rec.ParseFromString(parts)
            records.append(rec)
            parts = b""
    return records


def _item_key(item) -> str:
    return item.key or "/".join(item.nested_key)


def history(records: list[pb.Record]) -> list[dict]:
    import json

    return [{_item_key(i): json.loads(i.value_json) for i in r.history.item}
            for r in records if r.WhichOneof("record_type") == "history"]


def summary(records: list[pb.Record]) -> dict:
    import json

    out: dict = {}
    for r in records:
        if r.WhichOneof("record_type") == "summary":
            out.update({_item_key(i): json.loads(i.value_json) for i in r.summary.update})
    return out
