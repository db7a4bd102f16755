"""Reading a bundle: its manifest, transcripts and index tables, and `unpack` into run directories."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

from bird.bundle.archive import MANIFEST, BundleError, read_manifest, safe_member, sha256

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
        with zipfile.ZipFile(self.path) as zf:
            self._names = zf.namelist()

    @property
    def names(self) -> list[str]:
        return list(self._names)

    def read(self, name: str) -> bytes:
        with zipfile.ZipFile(self.path) as zf:
            try:
                return zf.read(safe_member(name))
            except KeyError:
                raise BundleError(f"{self.path}: the bundle has no {name}") from None
            except (zipfile.BadZipFile, OSError) as exc:
                raise BundleError(f"{self.path}: {name} cannot be read ({exc})") from None

    def transcript(self, cell: str) -> list[dict[str, Any]]:
        text = self.read(f"transcripts/{cell}.jsonl").decode()
        return [json.loads(ln) for ln in text.splitlines() if ln.strip()]

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
        """Write the members under `prefix` to `dest` (paths kept), each checked against its manifest hash."""
        hashes = {f["path"]: f["sha256"] for f in self.manifest.get("files", [])}
        written = []
        with zipfile.ZipFile(self.path) as zf:
            for name in zf.namelist():
                if name == MANIFEST or not name.startswith(prefix) or name.endswith("/"):
                    continue
                data = zf.read(safe_member(name))
                if hashes.get(name) != sha256(data):
                    raise BundleError(f"{self.path}: {name} does not match its manifest hash (edited or corrupt); "
                                      f"run python -m bird.bundle verify {self.path}")
                target = Path(dest) / name
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                written.append(name)
        return written


def unpack(path: str | Path, dest: str | Path) -> list[Path]:
    """Extract a bundle's run directories into `dest` (`dest/<cell id>/`, every file checked against the manifest);
    returns them in the manifest's order. The run directories are what bird.analysis reads."""
    bundle = Bundle(path)
    dest = Path(dest)
    staging = dest / ".unpack"
    bundle.extract(staging, "runs/")
    out = []
    for cell in bundle.cells:
        src, target = staging / "runs" / cell["id"], dest / cell["id"]
        if target.exists():
            raise BundleError(f"{target} already exists; unpack into an empty folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        src.rename(target)
        out.append(target)
    import shutil

    shutil.rmtree(staging, ignore_errors=True)
    return out
