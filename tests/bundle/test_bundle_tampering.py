"""Bundle checks at the inputs where a plausible one-line bug and the right code answer differently: a member edited
without changing its size, a manifest size that is wrong while the hash is right, an unlisted file inside a cell's
run directory, and a replay that differs within tolerance where bit-for-bit was expected."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from bird.bundle import BundleError, pack, replay, unpack, verify
from bird.bundle.archive import MANIFEST
from bird.environment import describe_environment

RUN = Path(__file__).resolve().parents[1] / "analysis" / "fixtures" / "smoke_runs" / "mujoco-inverted_pendulum" / "eureka-s0"
CELL = "eureka/mujoco-inverted_pendulum/seed0"
REWARD = f"runs/{CELL}/candidates/it1-c0/reward.py"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tamper") / "one.bird"
    pack([RUN], out)
    return out


def _rewrite(src: Path, dst: Path, edits: dict[str, bytes], extra: dict[str, bytes] | None = None) -> None:
    """Copy a bundle member by member, replacing some members' bytes and adding others (the manifest as given)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, edits.get(info.filename, zin.read(info)))
        for name, data in (extra or {}).items():
            zout.writestr(name, data)


def _problems_of(path: Path, member: str) -> list[str]:
    return [p for p in verify(path).problems if p.startswith(f"{member}:")]


def test_a_member_edited_to_the_same_size_is_named_by_verify_and_refused_by_unpack(bundle, tmp_path):
    original = zipfile.ZipFile(bundle).read(REWARD)
    edited = original.replace(b"return", b"RETURN", 1)
    assert len(edited) == len(original) and edited != original
    bad = tmp_path / "same_size.bird"
    _rewrite(bundle, bad, {REWARD: edited})
    assert _problems_of(bundle, REWARD) == []  # the control: the packed bundle verifies
    assert _problems_of(bad, REWARD), verify(bad).problems
    with pytest.raises(BundleError, match="reward.py"):
        unpack(bad, tmp_path / "out")


def test_a_manifest_size_that_does_not_match_its_member_is_named_by_verify(bundle, tmp_path):
    manifest = json.loads(zipfile.ZipFile(bundle).read(MANIFEST))
    entry = next(f for f in manifest["files"] if f["path"] == REWARD)
    entry["size"] += 1  # the hash still matches the member's bytes
    bad = tmp_path / "size.bird"
    _rewrite(bundle, bad, {MANIFEST: json.dumps(manifest).encode()})
    assert _problems_of(bad, REWARD), verify(bad).problems
    assert not verify(bad).ok


def test_unpack_writes_no_file_the_manifest_does_not_list(bundle, tmp_path):
    planted = f"runs/{CELL}/candidates/it1-c0/planted.py"
    bad = tmp_path / "planted.bird"
    _rewrite(bundle, bad, {}, {planted: b"import os\n"})
    assert any(p.startswith(f"{planted}:") for p in verify(bad).problems)
    out = tmp_path / "out"
    with pytest.raises(BundleError, match="planted.py"):
        unpack(bad, out)
    assert not list(out.rglob("planted.py"))  # neither in a cell nor left in the staging folder
    control = unpack(bundle, tmp_path / "control")  # the same bundle without the planted file unpacks
    assert [d.relative_to(tmp_path / "control").as_posix() for d in control] == [CELL]


# -- replay's verdict: the cell is re-run by a stand-in for the search (the training is not what is tested) ----------
def _bundle_of(run: Path, out: Path, environment: dict | None) -> Path:
    """A bundle of a copy of `run`, with `environment` recorded as its environment.json (None: none recorded)."""
    copy = out.parent / (out.stem + "-run")
    shutil.copytree(run, copy)
    if environment is not None:
        (copy / "environment.json").write_text(json.dumps({"sessions": [environment]}))
    pack([copy], out)
    return out


def _replayed_with(monkeypatch, source: Path, scale: float) -> None:
    """The search a replay runs writes `source` again, with result.json's returned_score times `scale`."""
    import bird.loop

    def search(cfg, target):  # noqa: ANN001, ANN202 - bird.loop.search's signature
        shutil.copytree(source, target)
        result = json.loads((target / "result.json").read_text())
        result["returned_score"] *= scale
        (target / "result.json").write_text(json.dumps(result))
        return result

    monkeypatch.setattr(bird.loop, "search", search)


@pytest.mark.parametrize("recorded_here, scale, status", [
    (True, 1.0, "identical"),  # the controls: no difference, either expectation
    (False, 1.0, "identical"),
    (False, 1 + 1e-12, "within_tolerance"),  # a recording from elsewhere may differ in the last digits
    (True, 1 + 1e-12, "differs"),  # the same machine and packages: bit-for-bit was expected
])
def test_replay_accepts_a_difference_within_tolerance_only_where_bit_for_bit_was_not_expected(
        monkeypatch, tmp_path, recorded_here, scale, status):
    path = _bundle_of(RUN, tmp_path / "cell.bird", describe_environment() if recorded_here else None)
    expect = "bit-for-bit" if recorded_here else "within tolerance"
    assert [c["expect"] for c in verify(path).cells] == [expect]
    _replayed_with(monkeypatch, tmp_path / "cell-run", scale)
    report = replay(path, tmp_path / "replayed")
    (cell,) = report.cells
    assert (cell.status, cell.expected) == (status, expect), cell
    assert report.ok is (status != "differs")
    if status == "differs":
        assert any("returned_score" in d for d in cell.differences), cell.differences
