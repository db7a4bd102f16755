"""A bundle someone else made is read within bounds: members' uncompressed sizes are checked against the manifest
and streamed, never read whole, and `verify` reports every malformed member instead of raising. The positive
control is the verify of a bundle packed from real recorded runs."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tracemalloc
import zipfile
from pathlib import Path

import pytest

from bird.bundle import BundleError, unpack, verify
from bird.bundle.archive import MANIFEST

ROOT = Path(__file__).resolve().parents[2]
SMOKE_RUNS = ROOT / "tests" / "analysis" / "fixtures" / "smoke_runs"
CELL = "eureka/mujoco-inverted_pendulum/seed0"
EVENTS = f"runs/{CELL}/events.jsonl"
TRANSCRIPT = f"transcripts/{CELL}.jsonl"


@pytest.fixture(scope="module")
def bundle(smoke_bundle: Path) -> Path:
    return smoke_bundle  # packed once per session (conftest.py); edits go to copies


def _manifest(bundle: Path) -> dict:
    return json.loads(zipfile.ZipFile(bundle).read(MANIFEST))


def _rewrite(src: Path, dst: Path, edits: dict[str, bytes], zeros: tuple[str, int] | None = None) -> Path:
    """A copy of `src` with members replaced; `zeros` = (member, n) makes that member n zero bytes, streamed."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zout:
        for info in zin.infolist():
            if zeros and info.filename == zeros[0]:
                with zout.open(info.filename, "w", force_zip64=True) as fh:
                    for _ in range(zeros[1] >> 24):
                        fh.write(bytes(1 << 24))
            else:
                zout.writestr(info.filename, edits.get(info.filename, zin.read(info)))
        for name, data in edits.items():
            if name not in zin.namelist():
                zout.writestr(name, data)
    return dst


def _added(bundle: Path, name: str, data: bytes) -> dict[str, bytes]:
    """Edits that add member `name` to the bundle, listed in its manifest with its true hash and size."""
    m = _manifest(bundle)
    m["files"] = [*m["files"], {"path": name, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}]
    return {MANIFEST: json.dumps(m).encode(), name: data}


def test_a_one_gib_member_in_a_small_bundle_is_refused_by_its_size_without_being_read(bundle, tmp_path):
    bomb = _rewrite(bundle, tmp_path / "bomb.bird", {}, zeros=(EVENTS, 1 << 30))
    assert bomb.stat().st_size < 8 << 20  # a few MB
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); "
            "from bird.bundle.__main__ import main; sys.exit(main(['verify', sys.argv[1]]))")
    proc = subprocess.run([sys.executable, "-c", code, str(bomb)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert f"{EVENTS}: content differs from its manifest hash (edited or corrupt: 1073741824 bytes uncompressed" \
        in proc.stdout
    with pytest.raises(BundleError, match="holds 1073741824 bytes uncompressed"):
        unpack(bomb, tmp_path / "out")


def test_a_member_the_manifest_says_is_large_is_hashed_as_it_streams(bundle, tmp_path):
    size = 128 << 20
    manifest = _manifest(bundle)
    for entry in manifest["files"]:
        if entry["path"] in (EVENTS, TRANSCRIPT):
            entry["size"] = size
    big = _rewrite(_rewrite(bundle, tmp_path / "a.bird", {MANIFEST: json.dumps(manifest).encode()}),
                   tmp_path / "big.bird", {}, zeros=(EVENTS, size))
    big = _rewrite(big, tmp_path / "big2.bird", {}, zeros=(TRANSCRIPT, size))
    tracemalloc.start()
    try:
        problems = verify(big).problems
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"verify held {peak >> 20} MiB at once for two {size >> 20} MiB members"
    assert f"{EVENTS}: content differs from its manifest hash (edited or corrupt)" in problems
    assert any(p.startswith(f"{TRANSCRIPT}: not checked line by line") for p in problems), problems


def _malformed(bundle: Path) -> dict[str, tuple[dict[str, bytes], str]]:
    m = _manifest(bundle)
    cell0 = m["cells"][0]
    env = f"runs/{CELL}/environment.json"
    return {
        "a files entry that is a string": ({MANIFEST: json.dumps({**m, "files": [*m["files"], "x"]}).encode()},
                                           "files[" ),
        "a transcript line that is a list": ({TRANSCRIPT: b"[1, 2]\n"}, f"{TRANSCRIPT} line 1: not a JSON object"),
        "a transcript line without a request": ({TRANSCRIPT: b'{"seq": 1, "response": {"text": "x"}}\n'},
                                                "is not a request key"),
        "a transcript nested 100,000 deep": ({TRANSCRIPT: b"[" * 100_000 + b"]" * 100_000 + b"\n"},
                                             "not JSON lines (JSON nested deeper than 64"),
        "a cell whose transcript record is a string": (
            {MANIFEST: json.dumps({**m, "cells": [{**cell0, "transcript": "x"}, *m["cells"][1:]]}).encode()}, None),
        "an environment record that is not JSON": (_added(bundle, env, b"\xff not json"), f"{env}: malformed"),
        "an environment whose cpu is a string": (_added(bundle, env, json.dumps({"sessions": [{"cpu": "x"}]}).encode()),
                                                 f"{env}: malformed (AttributeError"),
    }


@pytest.mark.parametrize("case", ["a files entry that is a string", "a transcript line that is a list",
                                  "a transcript line without a request", "a transcript nested 100,000 deep",
                                  "a cell whose transcript record is a string",
                                  "an environment record that is not JSON", "an environment whose cpu is a string"])
def test_verify_reports_a_malformed_member_instead_of_raising(bundle, tmp_path, case):
    edits, problem = _malformed(bundle)[case]
    report = verify(_rewrite(bundle, tmp_path / "bad.bird", edits))  # `python -m bird.bundle verify` prints it
    if problem is None:  # a record verify only reads to describe the cell: described without it
        assert report.cells[0]["id"] == CELL and report.cells[0]["replay"].startswith("replays from")
        return
    assert not report.ok and any(problem in p for p in report.problems), report.problems


def test_verify_of_a_bundle_of_real_runs_passes_and_unpacks(bundle, tmp_path):
    report = verify(bundle)
    assert report.ok, report.problems
    assert [c["id"] for c in report.cells][0] == CELL
    dirs = unpack(bundle, tmp_path / "out")
    assert (dirs[0] / "result.json").read_bytes() == (SMOKE_RUNS / "mujoco-inverted_pendulum" / "eureka-s0" /
                                                      "result.json").read_bytes()
