"""The bundle file: a ZIP archive (PKWARE APPNOTE 6.3, deflate, ZIP64 when needed) whose first member is
manifest.json, written byte-for-byte reproducibly (sorted members, fixed timestamps and permissions).
docs/bundles.md specifies the layout; this module only reads and writes archives and hashes."""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from bird.files import atomic_writer

__all__ = ["SCHEMA_VERSION", "FORMAT", "MANIFEST", "BundleError", "sha256", "write_archive", "read_manifest",
           "read_member", "member_names", "safe_member"]

FORMAT = "bird-bundle"
SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
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


def read_member(path: Path, name: str) -> bytes:
    with _open(path) as zf:
        try:
            return zf.read(name)
        except KeyError:
            raise BundleError(f"{path}: the bundle has no {name}") from None
        except (zipfile.BadZipFile, OSError) as exc:  # a corrupt member (CRC error)
            raise BundleError(f"{path}: {name} cannot be read ({exc})") from None


def read_manifest(path: Path) -> dict[str, Any]:
    """The manifest, checked for format and schema version."""
    try:
        manifest = json.loads(read_member(path, MANIFEST))
    except ValueError as exc:
        raise BundleError(f"{path}: {MANIFEST} is not JSON ({exc})") from None
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
    """A cell id used as a folder path: relative, '/'-separated, every part a plain name (no '', '.', '..')."""
    if not isinstance(cell_id, str) or not cell_id or "\\" in cell_id or "\0" in cell_id:
        return False
    return all(part not in ("", ".", "..") for part in cell_id.split("/"))
