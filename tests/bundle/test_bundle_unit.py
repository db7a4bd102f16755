"""Bundles without training: the four recorded smoke runs of tests/analysis packed, verified, read by pandas and
DuckDB without bird, the leaderboard drawn from the bundle; transcripts from a journal and a response cache; bad
bundles (edited, unsafe names, a newer schema, not a ZIP) refused with the file named; run comparison."""

from __future__ import annotations

import json
import re
import shutil
import sys
import warnings
import zipfile
from pathlib import Path

import pytest

from bird.bundle import Bundle, BundleError, pack, unpack, verify
from bird.bundle.archive import MANIFEST, read_manifest, sha256
from bird.bundle.compare import Tolerance, compare_runs, read_run
from bird.bundle.transcript import collect_transcript, first_difference
from bird.llm.base import Generator, Message, Request, Response
from bird.llm.cache import CachingGenerator, ResponseCache
from bird.llm.journal import JournalGenerator

SMOKE_RUNS = Path(__file__).resolve().parents[1] / "analysis" / "fixtures" / "smoke_runs"


@pytest.fixture(scope="module")
def bundle(smoke_bundle: Path) -> Path:
    return smoke_bundle  # packed once per session (conftest.py); edits go to copies


def test_pack_holds_every_run_an_index_and_a_manifest_of_hashes(bundle):
    b = Bundle(bundle)
    assert [c["id"] for c in b.cells] == [f"{m}/mujoco-inverted_pendulum/seed{s}" for m in ("eureka", "zeroshot")
                                          for s in (0, 1)]
    assert all(c["replayable"] and c["transcript"]["answers"] == 0 for c in b.cells)  # offline: nothing to record
    with zipfile.ZipFile(bundle) as zf:
        assert zf.namelist()[0] == MANIFEST
        names = set(zf.namelist())
        listed = {f["path"]: f["sha256"] for f in read_manifest(bundle)["files"]}
        assert names - {MANIFEST} == set(listed)
        assert all(sha256(zf.read(n)) == h for n, h in listed.items())
    assert "runs/eureka/mujoco-inverted_pendulum/seed0/candidates/it1-c0/reward.py" in names
    report = verify(bundle)
    assert report.ok, report.problems
    assert all("deterministic generator" in c["replay"] for c in report.cells)


def test_the_index_reads_with_pandas_and_duckdb_alone(bundle, tmp_path):
    import duckdb
    import pandas as pd

    with zipfile.ZipFile(bundle) as zf:
        zf.extract("index/runs.parquet", tmp_path)
        zf.extract("index/candidates.parquet", tmp_path)
        manifest = json.loads(zf.read(MANIFEST))
    runs = pd.read_parquet(tmp_path / "index" / "runs.parquet")
    assert sorted(runs["method"]) == ["eureka", "eureka", "zeroshot", "zeroshot"]
    best = duckdb.sql(f"select cell, max(score) as best from '{tmp_path / 'index' / 'candidates.parquet'}' "
                      "group by cell order by cell").fetchall()
    assert len(best) == 4 and manifest["schema_version"] == 1
    scores = {r.cell: r.returned_score for r in runs.itertuples()}
    assert scores["eureka/mujoco-inverted_pendulum/seed0"] == json.loads(
        (SMOKE_RUNS / "mujoco-inverted_pendulum" / "eureka-s0" / "result.json").read_text())["returned_score"]


def test_two_packs_differ_only_in_the_manifests_creation_record(bundle, tmp_path):
    again = tmp_path / "again.bird"
    pack([SMOKE_RUNS], again)
    with zipfile.ZipFile(bundle) as a, zipfile.ZipFile(again) as b:
        assert a.namelist() == b.namelist()
        assert all(a.read(n) == b.read(n) for n in a.namelist() if n != MANIFEST)
        ma, mb = (json.loads(z.read(MANIFEST)) for z in (a, b))
    assert {k: v for k, v in ma.items() if k not in ("created", "packed_on")} == \
           {k: v for k, v in mb.items() if k not in ("created", "packed_on")}


def test_unpack_gives_run_directories_that_compare_equal_to_the_originals(bundle, tmp_path):
    dirs = unpack(bundle, tmp_path)
    assert [d.relative_to(tmp_path).as_posix() for d in dirs] == [c["id"] for c in Bundle(bundle).cells]
    original = SMOKE_RUNS / "mujoco-inverted_pendulum" / "eureka-s1"
    assert compare_runs(read_run(original), read_run(tmp_path / "eureka/mujoco-inverted_pendulum/seed1")).identical
    with pytest.raises(BundleError, match="already exists"):
        unpack(bundle, tmp_path)


def test_the_leaderboard_reads_a_bundle_directly(bundle, tmp_path):
    from bird.analysis.__main__ import main

    fast = ["--n-resamples", "200", "--bt-resamples", "20", "--curve-resamples", "50"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        assert main(["leaderboard", str(SMOKE_RUNS), "--out", str(tmp_path / "dirs"), *fast]) == 0
        assert main(["leaderboard", str(bundle), "--out", str(tmp_path / "bundle"), *fast]) == 0
        assert main(["leaderboard", str(bundle), "--out", str(tmp_path / "bundle"), *fast]) == 0  # unpacked once
    from_dirs, from_bundle = ((tmp_path / d / "leaderboard.md").read_text() for d in ("dirs", "bundle"))
    assert "4 runs; 2 methods; 1 task." in from_bundle
    tables = [[ln for ln in md.splitlines() if ln.startswith("|")] for md in (from_dirs, from_bundle)]
    assert tables[0] == tables[1] and tables[0]
    assert (tmp_path / "bundle" / "runs" / "smoke" / "eureka" / "mujoco-inverted_pendulum" / "seed0").is_dir()


def _rewrite(src: Path, dst: Path, edits: dict[str, bytes | None], extra: dict[str, bytes] | None = None) -> None:
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = edits.get(info.filename, zin.read(info))
            if data is not None:
                zout.writestr(info.filename, data)
        for name, data in (extra or {}).items():
            zout.writestr(name, data)


def test_verify_names_edited_missing_and_unlisted_files(bundle, tmp_path):
    code = "runs/zeroshot/mujoco-inverted_pendulum/seed1/candidates/it1-c0/reward.py"
    bad = tmp_path / "bad.bird"
    _rewrite(bundle, bad, {code: b"def compute_reward(*a):\n    return 1.0, {}\n",
                           "runs/eureka/mujoco-inverted_pendulum/seed0/result.json": None}, {"runs/extra.txt": b"x"})
    problems = "\n".join(verify(bad).problems)
    assert f"{code}: content differs from its manifest hash" in problems
    assert "runs/eureka/mujoco-inverted_pendulum/seed0/result.json: listed in the manifest but missing" in problems
    assert "runs/eureka/mujoco-inverted_pendulum/seed0: missing result.json" in problems
    assert "runs/extra.txt: in the archive but not in the manifest" in problems
    with pytest.raises(BundleError, match="does not match its manifest hash"):
        unpack(bad, tmp_path / "out")


def test_unsafe_names_a_newer_schema_and_non_bundles_are_refused(bundle, tmp_path):
    slip = tmp_path / "slip.bird"
    _rewrite(bundle, slip, {}, {"runs/../../evil.txt": b"x"})
    assert "runs/../../evil.txt: in the archive but not in the manifest" in verify(slip).problems
    with pytest.raises(BundleError, match="not a plain relative path"):
        Bundle(slip).extract(tmp_path / "x", "runs/")
    assert not (tmp_path / "evil.txt").exists()
    manifest = json.loads(zipfile.ZipFile(bundle).read(MANIFEST))
    newer = tmp_path / "newer.bird"
    _rewrite(bundle, newer, {MANIFEST: json.dumps({**manifest, "schema_version": 99}).encode()})
    with pytest.raises(BundleError, match="schema_version 99 is not one this bird reads"):
        verify(newer)
    (tmp_path / "plain.bird").write_text("not a zip")
    with pytest.raises(BundleError, match="not a ZIP archive"):
        verify(tmp_path / "plain.bird")


@pytest.mark.parametrize("cell_id", ["../../escaped", "eureka/../../escaped", "/tmp/escaped", "eureka//seed0",
                                     "./eureka", "a\\..\\b", 7])
def test_a_cell_id_that_is_not_a_plain_relative_path_refuses_the_bundle(bundle, tmp_path, cell_id):
    manifest = json.loads(zipfile.ZipFile(bundle).read(MANIFEST))
    manifest["cells"][0]["id"] = cell_id  # unpack and replay use cell ids as folder paths
    crafted = tmp_path / "deep" / "er" / "crafted.bird"
    crafted.parent.mkdir(parents=True)
    _rewrite(bundle, crafted, {MANIFEST: json.dumps(manifest).encode()})
    for use in (Bundle, verify, lambda b: unpack(b, tmp_path / "deep" / "out")):
        with pytest.raises(BundleError, match=re.escape(f"cell id {cell_id!r} is not a relative path of plain names")):
            use(crafted)
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "deep" / "out").exists()


def test_pack_refuses_an_unfinished_run(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(SMOKE_RUNS / "mujoco-inverted_pendulum" / "eureka-s0", run)
    (run / "result.json").unlink()
    with pytest.raises(BundleError, match="only completed runs can be packed"):
        pack([run], tmp_path / "x.bird")


# -- transcripts: a journal over the response cache --------------------------------------------------------
class _Answers(Generator):
    """A cacheable generator answering from a table (the paid API is the boundary it stands for)."""

    provider, cacheable = "fake-api", True

    def complete(self, request: Request) -> Response:
        if "fail" in request.messages[-1].content:
            from bird.llm.base import LLMError

            raise LLMError("the provider gave up")
        return Response(text=f"answer to {request.messages[-1].content}", model=self.model, input_tokens=3,
                        output_tokens=4, cost_usd=0.01)


def _ask(gen: JournalGenerator, text: str, purpose: str = "reward", index: int = 0) -> None:
    try:
        gen.complete(Request(purpose, (Message("system", "s"), Message("user", text)), {"iteration": 1},
                             sample_index=index, seed=3))
    except Exception:  # noqa: BLE001, S110 - the failed call is journalled; that is what is tested
        pass


def test_the_transcript_holds_every_keyed_call_with_its_request_and_answer(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    gen = JournalGenerator(CachingGenerator(_Answers("m1"), cache, "readwrite"), tmp_path / "llm_calls.jsonl")
    _ask(gen, "first")
    _ask(gen, "judge this", purpose="judge_score", index=1)
    _ask(gen, "fail now")
    journal = [json.loads(ln) for ln in (tmp_path / "llm_calls.jsonl").read_text().splitlines()]
    req = Request("reward", (Message("system", "s"), Message("user", "first")), sample_index=0, seed=3)
    assert journal[0]["key"] == req.key("fake-api", "m1")
    t = collect_transcript(tmp_path, cache)
    assert [line["purpose"] for line in t.lines] == ["reward", "judge_score"]
    assert t.lines[1]["response"]["text"] == "answer to judge this" and t.lines[1]["request"]["sample_index"] == 1
    assert [f["purpose"] for f in t.failed] == ["reward"] and not t.missing
    cache.path(journal[1]["key"]).unlink()  # an answer the cache lost
    assert [m["purpose"] for m in collect_transcript(tmp_path, cache).missing] == ["judge_score"]


def test_first_difference_names_the_field_and_where_the_text_differs():
    recorded = {"provider": "p", "model": "m", "request": {
        "purpose": "mutation", "seed": 0, "sample_index": 1, "temperature": 1.0, "max_tokens": 100,
        "messages": [{"role": "system", "content": "s", "n_images": 0},
                     {"role": "user", "content": "feedback: " + "x" * 100 + " score 0.25", "n_images": 0}]}}
    new = Request("mutation", (Message("system", "s"), Message("user", "feedback: " + "x" * 100 + " score 0.31")),
                  temperature=1.0, max_tokens=100, sample_index=1, seed=0)
    _, what = first_difference(recorded, "p", "m", new)
    assert what.startswith("messages[1].content at character 119:") and "0.25" in what and "0.31" in what
    _, what = first_difference(recorded, "p", "m2", new)
    assert what == "model: recorded 'm', replayed 'm2'"


# -- comparing runs -----------------------------------------------------------------------------------------
def test_compare_ignores_the_execution_and_finds_a_changed_curve_value(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    src = SMOKE_RUNS / "mujoco-inverted_pendulum" / "eureka-s0"
    shutil.copytree(src, a)
    shutil.copytree(src, b)
    result = json.loads((b / "result.json").read_text())
    (b / "result.json").write_text(json.dumps({**result, "wall_s": 1.0, "cost_usd": 9.0}))
    (b / "events.jsonl").write_text("")
    assert compare_runs(read_run(a), read_run(b)).identical
    curve = b / "candidates" / "it1-c0" / "curve.csv"
    header, first, *rest = curve.read_text().splitlines()
    cells = first.split(",")
    score = float(cells[1])
    cells[1] = repr(score * (1 + 1e-9) + 1e-12)
    curve.write_text("\n".join([header, ",".join(cells), *rest]) + "\n")
    diff = compare_runs(read_run(a), read_run(b))
    assert not diff.identical and diff.within_tolerance  # 1e-9 relative: within the default 1e-6
    assert [d.path for d in diff.differences] == ["candidates/it1-c0/curve.csv:row 0:score"]
    assert not compare_runs(read_run(a), read_run(b), {"score": Tolerance()}).within_tolerance


def test_media_come_in_only_when_asked_and_never_as_pickles(tmp_path):
    import numpy as np

    run = tmp_path / "run"
    shutil.copytree(SMOKE_RUNS / "mujoco-inverted_pendulum" / "eureka-s0", run)
    cand = run / "candidates" / "it1-c0"
    np.savez(cand / "rollouts.npz", obs=np.arange(6.0).reshape(3, 2))
    np.savez(cand / "objects.npz", rows=np.array([{"a": 1}], dtype=object))  # loads only with pickle
    (cand / "episode0.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42")
    (run / "checkpoint.pkl").write_bytes(b"\x80\x04N.")
    text, media = pack([run], tmp_path / "text.bird"), pack([run], tmp_path / "media.bird", with_media=True)
    prefix = "runs/eureka/mujoco-inverted_pendulum/seed0/"
    names = {n.removeprefix(prefix) for n in Bundle(media.path).names}
    assert {"candidates/it1-c0/rollouts.npz", "candidates/it1-c0/episode0.mp4"} <= names
    assert "candidates/it1-c0/objects.npz" not in names and "checkpoint.pkl" not in names
    assert f"{prefix}candidates/it1-c0/objects.npz" in media.left_out
    assert not any(n.endswith((".npz", ".mp4", ".pkl")) for n in Bundle(text.path).names)
    assert text.size < media.size


def test_an_edited_answer_or_request_is_named_by_its_line_call_and_purpose(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(SMOKE_RUNS / "mujoco-inverted_pendulum" / "eureka-s0", run)
    n_offline = len((run / "llm_calls.jsonl").read_text().splitlines())
    cache = ResponseCache(tmp_path / "cache")
    gen = JournalGenerator(CachingGenerator(_Answers("m1"), cache, "readwrite"), run / "llm_calls.jsonl")
    _ask(gen, "a reward please")
    _ask(gen, "rate it", purpose="judge_score", index=2)
    bundle = tmp_path / "b.bird"
    [cell] = pack([run], bundle, cache_dir=tmp_path / "cache").cells
    assert cell["transcript"] == {"answers": 2, "missing": 0, "failed": 0, "unkeyed": 0,
                                  "deterministic_calls": n_offline}
    name = f"transcripts/{cell['id']}.jsonl"
    lines = Bundle(bundle).read(name).decode().splitlines()

    def edited(line: int, change) -> Path:
        rows = [json.loads(x) for x in lines]
        change(rows[line])
        out = tmp_path / f"edit{line}.bird"
        _rewrite(bundle, out, {name: "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows).encode()})
        return out

    answer = edited(1, lambda r: r["response"].update(text="something else"))
    problems = verify(answer).problems
    assert any(p.startswith(f"{name}: content differs from its manifest hash (edited or corrupt") for p in problems)
    assert any(p.startswith(f"{name} line 2 (call #{n_offline + 1}, key ") and "purpose judge_score" in p
               and p.endswith("the answer differs from the one recorded") for p in problems), problems
    request = edited(0, lambda r: r["request"]["messages"][1].update(content="another prompt"))
    assert any(p.startswith(f"{name} line 1 (call #{n_offline}") and
               p.endswith("the request differs from the one its key was made from") for p in verify(request).problems)


def _with_plugin(tmp_path: Path, module: str, source: str = "config") -> Path:
    """A bundle of one smoke run whose config names the plugin `module` (and whose result.json records it)."""
    run = tmp_path / "run"
    shutil.copytree(SMOKE_RUNS / "mujoco-inverted_pendulum" / "eureka-s0", run)
    if source == "config":
        text = (run / "config.yaml").read_text().replace("choices: []\n", f"choices: []\nplugins:\n- {module}\n", 1)
        (run / "config.yaml").write_text(text)
    result = json.loads((run / "result.json").read_text())
    result["plugins"] = [{"module": module, "source": source, "distribution": None, "version": None,
                          "sha256": "ab" * 32}]
    (run / "result.json").write_text(json.dumps(result))
    out = tmp_path / "plugin.bird"
    pack([run], out)
    return out


def test_replay_imports_only_the_plugins_the_user_names_and_says_so_before_any_work(tmp_path, monkeypatch):
    from bird.bundle import replay

    (tmp_path / "bundle_plug.py").write_text("IMPORTED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    bundle = _with_plugin(tmp_path, "bundle_plug")
    assert Bundle(bundle).cells[0]["plugins"][0]["module"] == "bundle_plug"  # the manifest records it
    with pytest.raises(BundleError, match=r"imports the plugin 'bundle_plug' \(sha256 abababababab when recorded\): "
                                          r"replay imports a plugin only when you name it \(--plugin bundle_plug\)"):
        replay(bundle, tmp_path / "out")
    assert not (tmp_path / "out").exists() and "bundle_plug" not in sys.modules  # not imported, nothing done


def test_replay_names_a_trusted_plugin_missing_here_or_an_entry_point_not_installed(tmp_path):
    from bird.bundle import replay

    with pytest.raises(BundleError, match="needs the plugin 'gone_plug' .*no module 'gone_plug' on the Python path"):
        replay(_with_plugin(tmp_path / "a", "gone_plug"), tmp_path / "out", plugins=["gone_plug"])
    with pytest.raises(BundleError, match="ran with the plugin 'ep_gone' of None .*a bird.plugins entry point that "
                                          "is not installed here"):
        replay(_with_plugin(tmp_path / "b", "ep_gone", source="entry point"), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_bundle_compare_on_the_command_line_says_identical_within_tolerance_or_what_differs(tmp_path, capsys):
    from bird.bundle.__main__ import main

    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        shutil.copytree(SMOKE_RUNS / "mujoco-inverted_pendulum" / "eureka-s0", d)
    assert main(["compare", str(a), str(b)]) == 0
    assert capsys.readouterr().out == f"{a} and {b}: identical\n"
    curve = b / "candidates" / "it1-c0" / "curve.csv"
    head, first, *rest = curve.read_text().splitlines()
    cells = first.split(",")
    cells[1] = repr(float(cells[1]) + 1e-7)  # the first checkpoint's score, moved a little
    curve.write_text("\n".join([head, ",".join(cells), *rest]) + "\n")
    assert main(["compare", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert f"{a} and {b}: differ (1 difference(s)" in out and "candidates/it1-c0/curve.csv:row 0:score" in out
    assert main(["compare", str(a), str(b), "--tol", "score=0.01"]) == 0
    assert ": within tolerance (1 difference(s)" in capsys.readouterr().out
    assert main(["compare", str(a), str(tmp_path)]) == 2
    assert "is not a finished run directory" in capsys.readouterr().err
