"""Framing between host and worker (never pickle): u32 header length, JSON header, u64 payload length, payload.
Requests go on the worker's stdin; replies on a dedicated pipe (not stdout, which goes to /dev/null).
Also: the text sanitiser the host applies to everything a program can put into a message."""

from __future__ import annotations

import json
import os
import struct
from typing import Any

from bird.escape import printable

__all__ = ["MAX_HEADER", "encode", "read_frame_blocking", "clean_text"]

MAX_HEADER = 1 << 16  # bytes of JSON a reply header may have


def encode(header: dict[str, Any], payload: bytes = b"") -> bytes:
    h = json.dumps(header).encode()
    return struct.pack("<I", len(h)) + h + struct.pack("<Q", len(payload)) + payload


def _read_exact(fd: int, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def read_frame_blocking(fd: int) -> tuple[dict[str, Any], bytes]:
    """Worker side: the next request (the host is trusted; it still gets a size check)."""
    (hlen,) = struct.unpack("<I", _read_exact(fd, 4))
    header = json.loads(_read_exact(fd, hlen))
    (plen,) = struct.unpack("<Q", _read_exact(fd, 8))
    return header, _read_exact(fd, plen) if plen else b""


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def clean_text(value: Any, limit: int, newlines: bool = False) -> str:
    """`value` as text of at most `limit` characters, with control and format characters (ANSI escapes, bidi
    overrides, NUL, ...) removed; newlines kept only when `newlines`."""
    text = value if isinstance(value, str) else json.dumps(value)[:limit]
    text = printable(text[: limit * 2], newlines)
    return text if len(text) <= limit else text[: limit - 1] + "…"
