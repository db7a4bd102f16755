"""The bundle file: a ZIP archive (PKWARE APPNOTE 6.3, deflate, ZIP64 when needed) whose first member is
manifest.json, written byte-for-byte reproducibly (sorted members, fixed timestamps and permissions).
docs/bundles.md specifies the layout; this module only reads and writes archives and hashes."""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from bird.escape import printable
from bird.files import atomic_writer, loads

__all__ = ["SCHEMA_VERSION", "FORMAT", "MANIFEST", "BundleError", "sha256", "write_archive", "read_manifest",
           "read_member", "member_names", "safe_member", "manifest_files", "stream_member", "MEMBER_LIMIT"]

FORMAT = "bird-bundle"
SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
MANIFEST_LIMIT = 16 << 20  # bytes of manifest.json
MEMBER_LIMIT = 64 << 20    # the most bytes of one member bird holds in memory (transcripts, tables, run records)
_CHUNK = 1 << 20
# what zipfile raises for a member it cannot decompress (corrupt data, bad CRC, encrypted, unknown compression)
_UNREADABLE = (zipfile.BadZipFile, OSError, zlib.error, EOFError, RuntimeError, NotImplementedError, ValueError)
_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest ZIP timestamp: members carry no packing time


class BundleError(ValueError):
    """A bundle that cannot be read, fails verification, or cannot be made; the message names the file or cell."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def safe_member(name: str) -> str:
    """A member name that stays inside the folder it is extracted to (relative, no `..`, no backslash)."""
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts or "\\" in name or name.startswith("/"):
        raise BundleError(f"bundle member {name!r} is not a plain relative path; refusing to read it")
    return name


def write_archive(path: Path, manifest: dict[str, Any], members: Iterable[tuple[str, bytes]]) -> int:
    """Write manifest.json then the members (sorted by name) to `path`; returns the archive's size in bytes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_writer(path) as fh, zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9,
                                                    allowZip64=True) as zf:
        for name, data in [(MANIFEST, (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode()),
                           *sorted(members)]:
            info = zipfile.ZipInfo(safe_member(name), date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data, compresslevel=9)
    return path.stat().st_size


def _open(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except FileNotFoundError:
        raise BundleError(f"{path}: no such bundle") from None
    except (zipfile.BadZipFile, OSError) as exc:
        raise BundleError(f"{path} is not a bird bundle (not a ZIP archive: {exc})") from None


def member_names(path: Path) -> list[str]:
    with _open(path) as zf:
        return zf.namelist()


def stream_member(zf: zipfile.ZipFile, path: Path, name: str, limit: int) -> Iterator[bytes]:
    """The member's bytes in chunks, decompressed as they are read; BundleError when it is missing, unreadable or
    holds more than `limit` bytes (its recorded uncompressed size is checked before reading a byte)."""
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise BundleError(f"{path}: the bundle has no {name}") from None
    if info.file_size > limit:
        raise BundleError(f"{path}: {name} holds {info.file_size} bytes uncompressed; at most {limit} are read")
    size = 0
    try:
        with zf.open(info) as fh:
            while chunk := fh.read(_CHUNK):
                size += len(chunk)
                if size > limit:
                    raise BundleError(f"{path}: {name} holds more than {limit} bytes uncompressed")
                yield chunk
    except _UNREADABLE as exc:  # a corrupt member (CRC error, bad deflate data)
        raise BundleError(f"{path}: {name} cannot be read ({str(exc)[:200]})") from None


def read_member(path: Path, name: str, limit: int = MEMBER_LIMIT) -> bytes:
    """A whole member, at most `limit` bytes (BundleError beyond)."""
    with _open(path) as zf:
        return b"".join(stream_member(zf, path, name, limit))


def manifest_files(manifest: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The manifest's `files` entries by path (each {path, sha256, size}) and a problem for each malformed one."""
    files = manifest.get("files", [])
    if not isinstance(files, list):
        return {}, [f"{MANIFEST}: files is not a list"]
    entries, problems = {}, []
    for k, entry in enumerate(files):
        ok = isinstance(entry, dict) and isinstance(entry.get("path"), str) and _plain_path(entry["path"]) \
            and isinstance(entry.get("sha256"), str) and _SHA256.fullmatch(entry["sha256"]) is not None \
            and isinstance(entry.get("size"), int) and not isinstance(entry["size"], bool) and entry["size"] >= 0
        if ok:
            entries[entry["path"]] = entry
        else:
            problems.append(f"{MANIFEST}: files[{k}] is not a {{path, sha256, size}} entry ({str(entry)[:80]})")
    return entries, problems


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _plain_path(name: str) -> bool:
    try:
        return safe_member(name) == name
    except BundleError:
        return False


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest, checked for format and schema version (parsed with bird/files.py's bounds)."""
    try:
        manifest = loads(read_member(path, MANIFEST, MANIFEST_LIMIT))
    except ValueError as exc:
        raise BundleError(f"{path}: {MANIFEST} is not JSON within bird's bounds ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise BundleError(f"{path}: {MANIFEST} does not describe a {FORMAT}")
    version = manifest.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION or version < 1:
        raise BundleError(f"{path}: schema_version {version!r} is not one this bird reads (1..{SCHEMA_VERSION}); "
                          "a newer bird wrote it")
    cells = manifest.get("cells", [])
    if not isinstance(cells, list):
        raise BundleError(f"{path}: {MANIFEST}'s cells is not a list")
    for cell in cells:
        cell_id = cell.get("id") if isinstance(cell, dict) else None
        if not _plain_cell_id(cell_id):
            raise BundleError(f"{path}: cell id {cell_id!r} is not a relative path of plain names (such as "
                              "'eureka/mujoco-hopper/seed0'); refusing the bundle")
    return manifest


def _plain_cell_id(cell_id: Any) -> bool:
    """A cell id used as a folder path: relative, '/'-separated, every part a plain name (no '', '.', '..'), no
    control or format character (it is printed, and it names folders)."""
    if not isinstance(cell_id, str) or not cell_id or "\\" in cell_id or printable(cell_id) != cell_id:
        return False
    return all(part not in ("", ".", "..") for part in cell_id.split("/"))
