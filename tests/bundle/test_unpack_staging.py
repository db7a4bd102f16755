"""`unpack` stages a bundle's run directories in a fresh folder of its own inside `dest`: a folder an earlier unpack
left there, a cell named like a staging folder, or a failure half-way leaves no trace in what it returns or in
`dest`."""

from __future__ import annotations

from pathlib import Path

import pytest

from bird.bundle.archive import FORMAT, SCHEMA_VERSION, BundleError, sha256, write_archive
from bird.bundle.reader import unpack


def _bundle(path: Path, cells: dict[str, dict[str, bytes]], bad_hash: str = "") -> Path:
    """A bundle of `cells` ({cell id: {file name: bytes}}); the manifest lists `bad_hash` with another file's hash."""
    files = {f"runs/{cell}/{name}": data for cell, run in cells.items() for name, data in run.items()}
    write_archive(path, {"format": FORMAT, "schema_version": SCHEMA_VERSION, "cells": [{"id": c} for c in cells],
                         "files": [{"path": n, "sha256": sha256(b"other" if n == bad_hash else d), "size": len(d)}
                                   for n, d in sorted(files.items())]}, files.items())
    return path


RUN = {"result.json": b'{"returned_score": 0.5}', "reward.py": b"def f(): ...\n"}


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_folder_an_earlier_unpack_left_in_dest_adds_nothing_to_the_cells_and_is_left_alone(tmp_path):
    dest = tmp_path / "dest"
    stale = dest / ".unpack" / "runs" / "m" / "t" / "seed0" / "planted.py"  # a killed unpack's staging folder
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"import os\n")
    (cell,) = unpack(_bundle(tmp_path / "b.bird", {"m/t/seed0": RUN}), dest)
    assert _tree(cell) == RUN  # the files the manifest lists, and no other
    assert stale.read_bytes() == b"import os\n"  # not this unpack's folder: not touched
    assert sorted(p.name for p in dest.iterdir()) == [".unpack", "m"]


def test_a_cell_named_like_a_staging_folder_is_unpacked_and_kept(tmp_path):
    cells = {".unpack/t/seed0": RUN, "m/t/seed0": {"result.json": b"{}"}}
    out = unpack(_bundle(tmp_path / "b.bird", cells), tmp_path / "dest")
    assert out == [tmp_path / "dest/.unpack/t/seed0", tmp_path / "dest/m/t/seed0"]
    assert [_tree(d) for d in out] == list(cells.values())
    assert sorted(p.name for p in (tmp_path / "dest").iterdir()) == [".unpack", "m"]


def test_an_unpack_that_fails_half_way_leaves_dest_as_it_was(tmp_path):
    cells = {"m/t/seed0": RUN, "m/t/seed1": RUN}
    path = _bundle(tmp_path / "b.bird", cells, bad_hash="runs/m/t/seed1/reward.py")
    dest = tmp_path / "dest"
    (dest / "mine").mkdir(parents=True)
    with pytest.raises(BundleError, match="seed1/reward.py does not match its manifest hash"):
        unpack(path, dest)
    assert [p.name for p in dest.iterdir()] == ["mine"]  # neither seed0's files nor a staging folder


def test_a_cell_already_in_dest_stops_the_unpack_before_any_file_is_written(tmp_path):
    path = _bundle(tmp_path / "b.bird", {"m/t/seed0": RUN, "m/t/seed1": RUN})
    dest = tmp_path / "dest"
    (dest / "m/t/seed1").mkdir(parents=True)
    with pytest.raises(BundleError, match="seed1 already exists; unpack into an empty folder"):
        unpack(path, dest)
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*")) == ["m", "m/t", "m/t/seed1"]


def _spy_extract(monkeypatch, then=None) -> list[Path]:
    """Record the folder each `Bundle.extract` of an unpack stages into; `then(staging, dest)` runs after it."""
    from bird.bundle import reader

    staged: list[Path] = []
    extract = reader.Bundle.extract

    def spy(self, dest, prefix):
        staged.append(Path(dest))
        out = extract(self, dest, prefix)
        if then:
            then(Path(dest))
        return out

    monkeypatch.setattr(reader.Bundle, "extract", spy)
    return staged


def test_the_staging_folder_is_a_fresh_hidden_folder_inside_dest_and_is_removed(tmp_path, monkeypatch):
    staged = _spy_extract(monkeypatch)
    dest = tmp_path / "dest"
    unpack(_bundle(tmp_path / "b.bird", {"m/t/seed0": RUN}), dest)
    (staging,) = staged
    assert staging.parent == dest and staging.name.startswith(".unpack-")  # a dot-folder: no reader takes it for a cell
    assert not staging.exists() and sorted(p.name for p in dest.iterdir()) == ["m"]


def test_a_cell_made_in_dest_while_the_bundle_is_extracted_stops_the_unpack_naming_it(tmp_path, monkeypatch):
    dest = tmp_path / "dest"
    _spy_extract(monkeypatch, then=lambda staging: (dest / "m/t/seed1").mkdir(parents=True))  # another process
    with pytest.raises(BundleError, match="seed1 already exists; unpack into an empty folder"):
        unpack(_bundle(tmp_path / "b.bird", {"m/t/seed0": RUN, "m/t/seed1": RUN}), dest)
    assert not any(p.name.startswith(".unpack-") for p in dest.iterdir())
    assert list((dest / "m/t/seed1").iterdir()) == []  # the other process's folder, left as it made it


def test_the_unpacks_own_error_is_raised_when_its_staging_folder_was_removed_under_it(tmp_path, monkeypatch):
    import shutil

    def removed(staging: Path) -> None:  # another process cleaning dest, then a failure of the unpack's own
        shutil.rmtree(staging)
        raise BundleError("a member could not be extracted")

    _spy_extract(monkeypatch, then=removed)
    with pytest.raises(BundleError, match="a member could not be extracted"):
        unpack(_bundle(tmp_path / "b.bird", {"m/t/seed0": RUN}), tmp_path / "dest")
