"""The bundle file itself (bird/bundle/archive.py, bird/bundle/reader.py) on small archives made here: reproducible
writing, the manifest's checks, member names and sizes, and extracting only what the manifest lists with its hash
(the packed smoke runs end to end: test_bundle_unit.py, test_bundle_tampering.py)."""

from __future__ import annotations

import io
import json
import zipfile
import zlib
from pathlib import Path

import pytest

from bird.bundle.archive import (
    FORMAT,
    MANIFEST,
    MEMBER_LIMIT,
    SCHEMA_VERSION,
    BundleError,
    manifest_files,
    member_names,
    read_manifest,
    read_member,
    safe_member,
    sha256,
    stream_member,
    write_archive,
)
from bird.bundle.reader import Bundle, is_bundle, unpack

RUN = {"runs/m/t/seed0/result.json": b'{"returned_score": 0.5}', "runs/m/t/seed0/reward.py": b"def f(): ...\n",
       "transcripts/m/t/seed0.jsonl": b'{"seq": 1}\n'}


def _manifest(files: dict[str, bytes], **changes) -> dict:
    return {"format": FORMAT, "schema_version": SCHEMA_VERSION, "cells": [{"id": "m/t/seed0"}],
            "files": [{"path": n, "sha256": sha256(d), "size": len(d)} for n, d in sorted(files.items())], **changes}


def _bundle(tmp_path: Path, files: dict[str, bytes] | None = None, name: str = "b.bird", **changes) -> Path:
    files = RUN if files is None else files
    path = tmp_path / name
    write_archive(path, _manifest(files, **changes), files.items())
    return path


def _raw(tmp_path: Path, members: dict[str, bytes], name: str = "raw.bird") -> Path:
    """An archive written without bird's writer (as anyone could)."""
    path = tmp_path / name
    with zipfile.ZipFile(path, "w") as zf:
        for n, d in members.items():
            zf.writestr(n, d)
    return path


# --- writing --------------------------------------------------------------------------------------------------
def test_an_archive_is_the_manifest_first_then_sorted_members_with_no_packing_time(tmp_path):
    path = _bundle(tmp_path / "deep" / "folder")
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
        assert [i.filename for i in infos] == [MANIFEST, *sorted(RUN)]
        assert all(i.date_time == (1980, 1, 1, 0, 0, 0) and i.external_attr == 0o644 << 16
                   and i.compress_type == zipfile.ZIP_DEFLATED for i in infos)
        assert zf.read(MANIFEST).decode() == json.dumps(_manifest(RUN), indent=1, sort_keys=True) + "\n"
    assert write_archive(tmp_path / "again.bird", _manifest(RUN), reversed(list(RUN.items()))) == path.stat().st_size
    assert (tmp_path / "again.bird").read_bytes() == path.read_bytes()


def _deflated_size(data: bytes, level: int) -> int:
    compressor = zlib.compressobj(level, zlib.DEFLATED, -15)  # raw deflate, as in a ZIP member
    return len(compressor.compress(data) + compressor.flush())


def test_members_are_compressed_at_the_highest_level(tmp_path):
    data = {"runs/a.txt": b"abcabcabd" * 20_000}
    path = _bundle(tmp_path, data)
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("runs/a.txt")
    assert info.compress_size < 700
    # bytes whose deflated size at level 9 differs from zlib's default level (6): each member is written at 9
    numbers = str(list(range(20_000))).encode()
    assert _deflated_size(numbers, 9) != _deflated_size(numbers, zlib.Z_DEFAULT_COMPRESSION)
    with zipfile.ZipFile(_bundle(tmp_path, {"runs/n.txt": numbers}, name="n.bird")) as zf:
        assert zf.getinfo("runs/n.txt").compress_size == _deflated_size(numbers, 9)


def test_a_bundle_of_more_members_than_a_plain_zip_holds_is_written_with_zip64(tmp_path):
    members = [(f"runs/{k:05d}", b"") for k in range(0xFFFF)]  # the manifest makes 65536: past the 65535 limit
    path = tmp_path / "many.bird"
    write_archive(path, {"format": FORMAT}, members)
    assert len(member_names(path)) == 0x10000


@pytest.mark.parametrize("name", ["", "/abs", "a/../b", "..", "a\\b", "//x"])
def test_a_member_name_that_is_not_a_plain_relative_path_is_refused(tmp_path, name):
    with pytest.raises(BundleError, match="is not a plain relative path; refusing to read it"):
        safe_member(name)
    with pytest.raises(BundleError):
        write_archive(tmp_path / "x.bird", _manifest({}), [(name, b"x")])


def test_plain_names_with_dots_are_members():
    assert safe_member("runs/a..b/.hidden/x.json") == "runs/a..b/.hidden/x.json"


# --- reading members ------------------------------------------------------------------------------------------
def test_a_member_is_read_whole_within_its_limit(tmp_path):
    path = _bundle(tmp_path)
    assert read_member(path, "runs/m/t/seed0/reward.py") == RUN["runs/m/t/seed0/reward.py"]
    assert member_names(path) == [MANIFEST, *sorted(RUN)]
    size = len(RUN["runs/m/t/seed0/reward.py"])
    assert read_member(path, "runs/m/t/seed0/reward.py", limit=size) == RUN["runs/m/t/seed0/reward.py"]
    with pytest.raises(BundleError, match=f"^{path}: runs/m/t/seed0/reward.py holds {size} bytes uncompressed; at most "
                                          f"{size - 1} are read$"):
        read_member(path, "runs/m/t/seed0/reward.py", limit=size - 1)
    with pytest.raises(BundleError, match="the bundle has no runs/none"):
        read_member(path, "runs/none")


def test_a_corrupt_member_is_a_bundle_error(tmp_path):
    path = _raw(tmp_path, {"a": b"hello world " * 100})
    data = bytearray(path.read_bytes())
    at = data.index(b"hello world")
    data[at:at + 5] = b"HELLO"
    path.write_bytes(bytes(data))
    with pytest.raises(BundleError, match=r"a cannot be read \(Bad CRC-32"):
        read_member(path, "a")


def test_the_reason_a_member_cannot_be_read_is_cut_at_two_hundred_characters(tmp_path):
    name = "n" * 300  # zipfile's message quotes the member's name
    path = _raw(tmp_path, {name: b"hello world " * 100})
    data = bytearray(path.read_bytes())
    at = data.index(b"hello world")
    data[at:at + 5] = b"HELLO"
    path.write_bytes(bytes(data))
    with pytest.raises(BundleError) as caught:
        read_member(path, name)
    reason = str(caught.value).split(" cannot be read (", 1)[1]
    assert reason == f"Bad CRC-32 for file '{name}'"[:200] + ")"


def test_a_missing_file_or_one_that_is_not_a_zip_is_named(tmp_path):
    with pytest.raises(BundleError, match="no such bundle"):
        member_names(tmp_path / "gone.bird")
    (tmp_path / "text.bird").write_text("not a zip")
    with pytest.raises(BundleError, match=r"text.bird is not a bird bundle \(not a ZIP archive: "):
        read_member(tmp_path / "text.bird", MANIFEST)
    assert not is_bundle(tmp_path / "text.bird") and not is_bundle(tmp_path / "gone.bird")
    assert not is_bundle(tmp_path) and not is_bundle(_raw(tmp_path, {"a": b"x"}))
    assert is_bundle(_bundle(tmp_path))


# --- the manifest ---------------------------------------------------------------------------------------------
def test_the_manifest_is_read_when_it_describes_a_bundle_this_bird_reads(tmp_path):
    assert read_manifest(_bundle(tmp_path))["cells"] == [{"id": "m/t/seed0"}]
    for version in (0, SCHEMA_VERSION + 1, "1", None, 1.0):
        with pytest.raises(BundleError, match=rf"schema_version {version!r} is not one this bird reads \(1..1\); a newer bird wrote it$"):
            read_manifest(_bundle(tmp_path, name=f"v{version}.bird", schema_version=version))
    with pytest.raises(BundleError, match="manifest.json does not describe a bird-bundle"):
        read_manifest(_bundle(tmp_path, name="f.bird", format="other"))
    with pytest.raises(BundleError, match="manifest.json does not describe"):
        read_manifest(_raw(tmp_path, {MANIFEST: b"[1]"}))
    with pytest.raises(BundleError, match="manifest.json's cells is not a list"):
        read_manifest(_bundle(tmp_path, name="c.bird", cells={"id": "x"}))
    with pytest.raises(BundleError, match="manifest.json is not JSON within bird's bounds"):
        read_manifest(_raw(tmp_path, {MANIFEST: b"{" * 100 + b"}" * 100}, "deep.bird"))
    assert read_manifest(_bundle(tmp_path, name="nocells.bird", cells=[]))["cells"] == []


def test_a_manifest_without_cells_is_a_bundle_of_no_cells(tmp_path):
    manifest = _manifest(RUN)
    del manifest["cells"]
    write_archive(tmp_path / "b.bird", manifest, RUN.items())
    assert "cells" not in read_manifest(tmp_path / "b.bird")
    assert Bundle(tmp_path / "b.bird").cells == []


def test_a_manifest_over_sixteen_mib_is_not_read(tmp_path):
    path = _raw(tmp_path, {MANIFEST: json.dumps({"format": FORMAT, "pad": "x" * (16 << 20)}).encode()})
    with pytest.raises(BundleError, match="holds .* bytes uncompressed; at most 16777216 are read"):
        read_manifest(path)


@pytest.mark.parametrize("cell_id", ["", "/abs", "a//b", "a/./b", "../x", "a/..", "a\\b", "a\x1b[2Jb", "a\u202eb",
                                     7, None, "a/"])
def test_a_cell_id_that_is_not_a_path_of_plain_names_refuses_the_bundle(tmp_path, cell_id):
    path = _bundle(tmp_path, cells=[{"id": cell_id}])
    with pytest.raises(BundleError, match=r"is not a relative path of plain names \(such as "
                                          r"'eureka/mujoco-hopper/seed0'\); refusing the bundle$"):
        read_manifest(path)


def test_cells_that_are_not_objects_refuse_the_bundle_and_plain_ids_pass(tmp_path):
    with pytest.raises(BundleError, match="cell id None"):
        read_manifest(_bundle(tmp_path, cells=["m/t/seed0"]))
    assert read_manifest(_bundle(tmp_path, name="ok.bird", cells=[{"id": "a.b/c-d/é"}]))["cells"][0]["id"] == "a.b/c-d/é"


def test_manifest_entries_are_read_and_each_malformed_one_named():
    good = {"path": "runs/a", "sha256": "0" * 64, "size": 0}
    bad = [{"path": "../a", "sha256": "0" * 64, "size": 1}, {"path": "a", "sha256": "0" * 63, "size": 1},
           {"path": "a", "sha256": "A" * 64, "size": 1}, {"path": "a", "sha256": "0" * 64, "size": -1},
           {"path": "a", "sha256": "0" * 64, "size": True}, {"path": "a", "sha256": "0" * 64, "size": 1.0},
           {"path": 3, "sha256": "0" * 64, "size": 1}, {"path": "a", "sha256": None, "size": 1}, "a", None]
    entries, problems = manifest_files({"files": [good, *bad]})
    assert entries == {"runs/a": good}
    assert problems == [f"manifest.json: files[{k}] is not a {{path, sha256, size}} entry ({str(e)[:80]})"
                        for k, e in enumerate(bad, 1)]
    assert manifest_files({"files": {"a": 1}}) == ({}, ["manifest.json: files is not a list"])
    assert manifest_files({}) == ({}, [])


# --- the reader ------------------------------------------------------------------------------------------------
def test_a_bundle_reads_members_up_to_their_manifest_size(tmp_path):
    bundle = Bundle(_bundle(tmp_path))
    assert bundle.read("runs/m/t/seed0/reward.py") == RUN["runs/m/t/seed0/reward.py"]
    assert bundle.limit("runs/m/t/seed0/reward.py") == len(RUN["runs/m/t/seed0/reward.py"])
    assert bundle.limit("unlisted") == MEMBER_LIMIT
    assert bundle.transcript("m/t/seed0") == [{"seq": 1}]
    assert bundle.cell("m/t/seed0") == {"id": "m/t/seed0"}
    with pytest.raises(BundleError, match=r"no cell 'x'; cells: \['m/t/seed0'\]"):
        bundle.cell("x")
    with pytest.raises(BundleError, match="not a plain relative path"):
        bundle.read("../x")
    assert bundle.names == [MANIFEST, *sorted(RUN)] and bundle.names is not bundle._names


def test_a_member_of_several_read_chunks_is_read_and_extracted_whole(tmp_path):
    big = bytes(range(256)) * (5 << 12)  # 5 MiB: five 1 MiB chunks as it streams
    files = {**RUN, "runs/m/t/seed0/big.bin": big}
    path = _bundle(tmp_path, files)
    assert read_member(path, "runs/m/t/seed0/big.bin") == big
    with zipfile.ZipFile(path) as zf:  # streamed a chunk at a time, never held whole
        assert [len(c) for c in stream_member(zf, path, "runs/m/t/seed0/big.bin", len(big))] == [1 << 20] * 5
    assert Bundle(path).read("runs/m/t/seed0/big.bin") == big
    Bundle(path).extract(tmp_path / "out", "runs/")
    assert (tmp_path / "out" / "runs/m/t/seed0/big.bin").read_bytes() == big


def test_an_index_table_is_read_from_its_parquet_member(tmp_path):
    import pandas as pd

    buffer = io.BytesIO()
    pd.DataFrame({"cell": ["m/t/seed0", "m/t/seed0"], "seq": [0, 1]}).to_parquet(buffer)
    path = _bundle(tmp_path, {**RUN, "index/llm_calls.parquet": buffer.getvalue()})
    table = Bundle(path).table("llm_calls")
    assert list(table["cell"]) == ["m/t/seed0", "m/t/seed0"] and list(table["seq"]) == [0, 1]
    with pytest.raises(BundleError, match="the bundle has no index/runs.parquet"):
        Bundle(path).table("runs")


def test_a_member_larger_than_its_manifest_size_is_not_read(tmp_path):
    files = dict(RUN)
    path = tmp_path / "b.bird"
    manifest = _manifest(files)
    manifest["files"][1]["size"] = 3  # reward.py, listed smaller than it is
    write_archive(path, manifest, files.items())
    with pytest.raises(BundleError, match=f"^{path}: runs/m/t/seed0/reward.py holds 13 bytes uncompressed; at most 3 "
                                          "are read$"):
        Bundle(path).read("runs/m/t/seed0/reward.py")
    assert Bundle(path).limit("runs/m/t/seed0/reward.py") == 3


def test_extract_writes_only_listed_members_under_the_prefix_each_checked_against_its_hash(tmp_path):
    bundle = Bundle(_bundle(tmp_path))
    assert sorted(bundle.extract(tmp_path / "out", "runs/")) == sorted(n for n in RUN if n.startswith("runs/"))
    assert (tmp_path / "out" / "runs/m/t/seed0/reward.py").read_bytes() == RUN["runs/m/t/seed0/reward.py"]
    assert not (tmp_path / "out" / "transcripts").exists() and not (tmp_path / "out" / MANIFEST).exists()


def test_extract_without_a_prefix_writes_every_listed_member_but_the_manifest(tmp_path):
    assert sorted(Bundle(_bundle(tmp_path)).extract(tmp_path / "out")) == sorted(RUN)
    assert (tmp_path / "out" / "transcripts/m/t/seed0.jsonl").read_bytes() == RUN["transcripts/m/t/seed0.jsonl"]
    assert not (tmp_path / "out" / MANIFEST).exists()


def test_extract_names_the_bundle_of_a_member_larger_than_its_manifest_size(tmp_path):
    manifest = _manifest(RUN)
    manifest["files"][1]["size"] = 3  # reward.py, listed smaller than it is
    path = tmp_path / "b.bird"
    write_archive(path, manifest, RUN.items())
    with pytest.raises(BundleError, match=f"^{path}: runs/m/t/seed0/reward.py holds 13 bytes uncompressed"):
        Bundle(path).extract(tmp_path / "out", "runs/")


def test_extract_refuses_a_member_the_manifest_does_not_list(tmp_path):
    path = _bundle(tmp_path)
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("runs/m/t/seed0/planted.py", b"import os")
    with pytest.raises(BundleError, match="planted.py is not in the manifest; run python -m bird.bundle verify"):
        Bundle(path).extract(tmp_path / "out", "runs/")
    assert not (tmp_path / "out" / "runs/m/t/seed0/planted.py").exists()


def test_extract_leaves_nothing_of_a_member_whose_hash_differs(tmp_path):
    files = dict(RUN)
    manifest = _manifest(files)
    manifest["files"][1]["sha256"] = sha256(b"something else")
    path = tmp_path / "b.bird"
    write_archive(path, manifest, files.items())
    with pytest.raises(BundleError, match="reward.py does not match its manifest hash"):
        Bundle(path).extract(tmp_path / "out", "runs/")
    assert not (tmp_path / "out" / "runs/m/t/seed0/reward.py").exists()
    assert not [p for p in (tmp_path / "out").rglob("*") if p.is_file() and p.name != "result.json"]


def test_extract_skips_folder_entries(tmp_path):
    path = _bundle(tmp_path)
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("runs/m/t/seed0/sub/", b"")
    assert "runs/m/t/seed0/sub/" not in Bundle(path).extract(tmp_path / "out", "runs/")


def test_unpack_gives_each_cell_its_folder_in_manifest_order_and_refuses_to_overwrite(tmp_path):
    files = {**RUN, "runs/m/t/seed1/result.json": b"{}"}
    path = _bundle(tmp_path, files, cells=[{"id": "m/t/seed1"}, {"id": "m/t/seed0"}])
    out = unpack(path, tmp_path / "new" / "dest")
    assert out == [tmp_path / "new/dest/m/t/seed1", tmp_path / "new/dest/m/t/seed0"]
    assert (out[1] / "reward.py").read_bytes() == RUN["runs/m/t/seed0/reward.py"]
    assert sorted(p.name for p in (tmp_path / "new" / "dest").iterdir()) == ["m"]  # no staging folder left
    with pytest.raises(BundleError, match="seed1 already exists; unpack into an empty folder"):
        unpack(path, tmp_path / "new" / "dest")


def test_unpack_reads_the_run_directories_alone(tmp_path):
    manifest = _manifest(RUN)
    manifest["files"][2]["sha256"] = sha256(b"another transcript")  # verify's to report; unpack does not read it
    path = tmp_path / "b.bird"
    write_archive(path, manifest, RUN.items())
    assert unpack(path, tmp_path / "dest") == [tmp_path / "dest/m/t/seed0"]
    assert sorted(p.name for p in (tmp_path / "dest").iterdir()) == ["m"]


def test_unpack_of_a_bundle_without_runs_gives_no_folders(tmp_path):
    path = _bundle(tmp_path, {"transcripts/m/t/seed0.jsonl": b"{}\n"}, cells=[])
    assert unpack(path, tmp_path / "dest") == []
