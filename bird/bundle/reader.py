"""Reading a bundle: its manifest, transcripts and index tables, and `unpack` into run directories."""

from __future__ import annotations

import hashlib
import io
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from bird.bundle.archive import (
    MANIFEST,
    MEMBER_LIMIT,
    BundleError,
    manifest_files,
    read_manifest,
    safe_member,
    stream_member,
)
from bird.files import atomic_writer, loads

__all__ = ["Bundle", "unpack", "is_bundle"]


def is_bundle(path: str | Path) -> bool:
    """A file (not a folder) that opens as a ZIP archive with a manifest.json: what bird.analysis treats as a bundle."""
    path = Path(path)
    if not path.is_file() or not zipfile.is_zipfile(path):
        return False
    with zipfile.ZipFile(path) as zf:
        return MANIFEST in zf.namelist()


class Bundle:
    """An open bundle file: `manifest`, `cells`, `read(name)`, `transcript(cell)`, `table(name)`."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.manifest = read_manifest(self.path)
        self.cells: list[dict[str, Any]] = list(self.manifest.get("cells", []))
        self.files, self.manifest_problems = manifest_files(self.manifest)
        with zipfile.ZipFile(self.path) as zf:
            self._names = zf.namelist()

    @property
    def names(self) -> list[str]:
        return list(self._names)

    def limit(self, name: str) -> int:
        """The most bytes member `name` may hold: its size in the manifest (MEMBER_LIMIT for an unlisted one)."""
        entry = self.files.get(name)
        return min(entry["size"], MEMBER_LIMIT) if entry else MEMBER_LIMIT

    def read(self, name: str) -> bytes:
        """A whole member, no larger than the manifest says (BundleError otherwise)."""
        with zipfile.ZipFile(self.path) as zf:
            return b"".join(stream_member(zf, self.path, safe_member(name), self.limit(name)))

    def transcript(self, cell: str) -> list[dict[str, Any]]:
        """The cell's transcript lines (parsed with bird/files.py's bounds; ValueError when one is not JSON)."""
        text = self.read(f"transcripts/{cell}.jsonl").decode()
        return [loads(ln) for ln in text.splitlines() if ln.strip()]

    def table(self, name: str) -> Any:
        """An index table (`runs`, `candidates`, `llm_calls`) as a pandas DataFrame."""
        import pandas as pd

        return pd.read_parquet(io.BytesIO(self.read(f"index/{name}.parquet")))

    def cell(self, cell_id: str) -> dict[str, Any]:
        for c in self.cells:
            if c["id"] == cell_id:
                return c
        raise BundleError(f"{self.path}: no cell {cell_id!r}; cells: {[c['id'] for c in self.cells]}")

    def extract(self, dest: Path, prefix: str = "") -> list[str]:
        """Write the members under `prefix` to `dest` (paths kept), each streamed, no larger than its manifest size
        and checked against its manifest hash."""
        written = []
        with zipfile.ZipFile(self.path) as zf:
            for name in zf.namelist():
                if name == MANIFEST or not name.startswith(prefix) or name.endswith("/"):
                    continue
                entry = self.files.get(safe_member(name))
                if entry is None:
                    raise BundleError(f"{self.path}: {name} is not in the manifest; run python -m bird.bundle "
                                      f"verify {self.path}")
                target = Path(dest) / name
                target.parent.mkdir(parents=True, exist_ok=True)
                with atomic_writer(target) as fh:
                    digest = hashlib.sha256()
                    for chunk in stream_member(zf, self.path, name, entry["size"]):
                        digest.update(chunk)
                        fh.write(chunk)
                    if digest.hexdigest() != entry["sha256"]:  # raised inside: nothing is left at `target`
                        raise BundleError(f"{self.path}: {name} does not match its manifest hash (edited or "
                                          f"corrupt); run python -m bird.bundle verify {self.path}")
                written.append(name)
        return written


def unpack(path: str | Path, dest: str | Path) -> list[Path]:
    """Extract a bundle's run directories into `dest` (`dest/<cell id>/`, every file checked against the manifest);
    returns them in the manifest's order. The run directories are what bird.analysis reads. The files are staged in a
    fresh folder of this unpack's own inside `dest` (so no other unpack's folder, nor a cell's, is ever read or
    removed), which is removed whether the unpack succeeds or fails."""
    bundle = Bundle(path)
    dest = Path(dest)
    targets = [dest / cell["id"] for cell in bundle.cells]
    for target in targets:
        if target.exists():
            raise BundleError(f"{target} already exists; unpack into an empty folder")
    dest.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=dest))
    try:
        bundle.extract(staging, "runs/")
        for cell, target in zip(bundle.cells, targets, strict=True):
            if target.exists():  # made since the check above (another process unpacking here)
                raise BundleError(f"{target} already exists; unpack into an empty folder")
            target.parent.mkdir(parents=True, exist_ok=True)
            (staging / "runs" / cell["id"]).rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return targets
