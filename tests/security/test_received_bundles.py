"""A bundle's transcript keys become file names in the replay's response cache, so they are validated (issue 42):
a key must be 64 hex digits and the one its request makes, recomputed for requests with images too (from their
recorded digests), or verify fails; replay fills a fresh cache under --out and nothing else. The attacks forge a
bundle whose manifest hashes match (a stranger packs what they like), using the hole verify had: a request that
counts an image could not be recomputed, so any key passed."""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from bird.bundle import Bundle, BundleError, pack, replay, verify
from bird.bundle.archive import MANIFEST
from bird.llm.base import Generator, Message, Request, Response
from bird.llm.cache import CachingGenerator, ResponseCache
from bird.llm.journal import JournalGenerator

SMOKE_RUN = Path(__file__).resolve().parents[1] / "analysis" / "fixtures" / "smoke_runs" / \
    "mujoco-inverted_pendulum" / "eureka-s0"


class _Answers(Generator):
    """A cacheable generator (the paid API is the boundary it stands for)."""

    provider, cacheable = "fake-api", True

    def complete(self, request: Request) -> Response:
        return Response(text=f"answer to {request.messages[-1].content}", model=self.model, input_tokens=3,
                        output_tokens=4, cost_usd=0.01)


@pytest.fixture(scope="module")
def packed(tmp_path_factory) -> tuple[Path, str]:
    """A bundle of one smoke run with two recorded answers, the second to a request with an image; its transcript."""
    root = tmp_path_factory.mktemp("received")
    run = root / "run"
    shutil.copytree(SMOKE_RUN, run)
    gen = JournalGenerator(CachingGenerator(_Answers("m1"), ResponseCache(root / "cache"), "readwrite"),
                           run / "llm_calls.jsonl")
    gen.complete(Request("reward", (Message("system", "s"), Message("user", "a reward please")), {"iteration": 1}))
    gen.complete(Request("judge_score", (Message("user", "rate this clip", (b"\x89PNG frame",)),), {"iteration": 1}))
    bundle = root / "b.bird"
    [cell] = pack([run], bundle, cache_dir=root / "cache").cells
    return bundle, f"transcripts/{cell['id']}.jsonl"


def _forge(src: Path, dst: Path, name: str, edit) -> None:
    """Copy a bundle with one member rewritten and the manifest's hash and size of it made to match."""
    with zipfile.ZipFile(src) as zin:
        members = {i.filename: zin.read(i) for i in zin.infolist()}
    members[name] = edit(members[name])
    manifest = json.loads(members[MANIFEST])
    for f in manifest["files"]:
        if f["path"] == name:
            f["sha256"], f["size"] = hashlib.sha256(members[name]).hexdigest(), len(members[name])
    members[MANIFEST] = json.dumps(manifest).encode()
    with zipfile.ZipFile(dst, "w") as zout:
        for member, data in members.items():
            zout.writestr(member, data)


def _with_key(key: str):
    """Edit: the first answer's line, its key replaced and its request counting an image (the former blind spot)."""
    def edit(data: bytes) -> bytes:
        rows = [json.loads(x) for x in data.decode().splitlines()]
        rows[0]["key"] = key
        rows[0]["request"]["messages"][-1]["n_images"] = 1
        return "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows).encode()
    return edit


def _replay_without_training(bundle: Path, out: Path) -> None:
    """Replay up to the search of each cell, which stands in for the real one (what is tested is what replay writes
    before it)."""
    import bird.loop

    def search(cfg, target):
        raise RuntimeError("not run here")

    real, bird.loop.search = bird.loop.search, search
    try:
        replay(bundle, out)
    finally:
        bird.loop.search = real


def test_a_transcript_key_that_leaves_the_cache_is_refused_and_nothing_is_written_outside_out(packed, tmp_path):
    bundle, name = packed
    target = tmp_path / "planted"  # where the key points, from out/.bundle/<cache>/
    forged = tmp_path / "forged.bird"
    _forge(bundle, forged, name, _with_key(f"aaaaaaaa/{'../' * 16}{str(target).lstrip('/')}"))
    problems = verify(forged).problems
    assert any("is not a request key" in p for p in problems), problems
    with pytest.raises(BundleError, match="fails verification"):
        _replay_without_training(forged, tmp_path / "out")
    assert not target.with_suffix(".json").exists() and not list(tmp_path.rglob("planted*"))


def test_a_bundle_cannot_plant_an_answer_in_the_users_cache(packed, tmp_path, monkeypatch):
    bundle, name = packed
    user_cache = tmp_path / "user-cache"
    monkeypatch.setenv("BIRD_CACHE_DIR", str(user_cache))
    victim = Request("reward", (Message("user", "the user's next prompt"),)).key("fake-api", "m1")
    for key in (victim, f"aaaaaaaa/{'../' * 16}{str(user_cache).lstrip('/')}/{victim[:2]}/{victim}"):
        forged = tmp_path / "forged.bird"
        _forge(bundle, forged, name, _with_key(key))
        assert not verify(forged).ok
        with pytest.raises(BundleError, match="fails verification"):
            _replay_without_training(forged, tmp_path / "out")
        assert ResponseCache(user_cache).get(victim) is None and not user_cache.exists()


def test_verify_recomputes_the_key_of_a_request_with_images(packed, tmp_path):
    bundle, name = packed
    lines = [json.loads(x) for x in Bundle(bundle).read(name).decode().splitlines()]
    assert lines[1]["request"]["image_sha256"] == [[hashlib.sha256(b"\x89PNG frame").hexdigest()]]
    assert verify(bundle).ok  # positive control: the recorded keys, images included, recompute
    forged = tmp_path / "forged.bird"

    def other_image(data: bytes) -> bytes:
        rows = [json.loads(x) for x in data.decode().splitlines()]
        rows[1]["request"]["image_sha256"] = [[hashlib.sha256(b"another frame").hexdigest()]]
        return "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows).encode()

    _forge(bundle, forged, name, other_image)
    assert any("line 2" in p and "the request differs from the one its key was made from" in p
               for p in verify(forged).problems)
    _forge(bundle, forged, name, lambda d: d.replace(b'"image_sha256"', b'"image_digests"'))
    assert any("line 2" in p and "cannot be recomputed" in p for p in verify(forged).problems)


def test_replay_fills_a_fresh_cache_under_out_and_leaves_the_users_alone(packed, tmp_path, monkeypatch,
                                                                        tmp_path_factory):
    bundle, _ = packed
    user_cache = tmp_path / "user-cache"
    monkeypatch.setenv("BIRD_CACHE_DIR", str(user_cache))
    out = tmp_path / "out"
    victim = tmp_path_factory.mktemp("victim") / "victim.txt"
    victim.write_text("the user's file\n")
    out.mkdir()
    (out / "replay_report.json").symlink_to(victim)  # planted where replay writes its report
    _replay_without_training(bundle, out)
    [cache] = (out / ".bundle").glob("llm_cache-*")
    assert len(list(cache.rglob("*.json"))) == 2  # both recorded answers, under --out
    assert not user_cache.exists()
    assert {p for p in tmp_path.iterdir()} == {out}
    assert victim.read_text() == "the user's file\n" and not (out / "replay_report.json").is_symlink()
    assert json.loads((out / "replay_report.json").read_text())["cells"]


def test_the_response_cache_takes_only_request_keys_as_names(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    for bad in ("../x", "A" * 64, "a" * 63, "a" * 64 + "/", "a" * 62 + "/.", ""):
        with pytest.raises(ValueError, match="not a request key"):
            cache.put(bad, {"response": {}})
        assert cache.get(bad) is None
    cache.put("a" * 64, {"x": 1})
    assert cache.get("a" * 64)["x"] == 1
    assert list(tmp_path.rglob("*.json")) == [tmp_path / "cache" / "aa" / ("a" * 64 + ".json")]
