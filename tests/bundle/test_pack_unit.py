"""bird/bundle/pack.py in the test process, on small run directories written here: which runs and files a bundle
holds, what its manifest, cells and index tables say, and each refusal with the run and the reason named."""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from bird.bundle import Bundle, BundleError, pack
from bird.bundle.archive import FORMAT, MANIFEST, SCHEMA_VERSION, sha256
from bird.bundle.pack import _cache_for, _candidate_rows, _files, _no_pickle, _replayable, _runs, cell_id
from bird.bundle.transcript import Transcript
from bird.llm.cache import ResponseCache

KEY_A, KEY_B, KEY_C = "a" * 64, "b" * 64, "c" * 64


def _run(root: Path, name: str = "run", method: str = "eureka", env: str = "mujoco/hopper", seed: int = 3,
         config_hash: str = "h1", status: str = "completed", config: str = "method: eureka\n",
         calls: list[dict] | None = None) -> Path:
    """A completed run directory: config, status, result, two candidates (one without reward.py), a journal."""
    run = root / name
    (run / "candidates" / "it1-c0").mkdir(parents=True)
    (run / "candidates" / "it1-c1").mkdir(parents=True)
    (run / "config.yaml").write_text(config)
    (run / "status.json").write_text('{"state": "done"}')
    result = {"status": status, "method": method, "env": env, "suite": env.split("/")[0], "task": env.split("/")[-1],
              "seed": seed, "budget": "smoke", "config_hash": config_hash, "returned_score": 0.25,
              "generator": {"provider": "fake-api"}, "llm_calls": len(calls or []), "determinism": "bit-for-bit",
              "plugins": ["my_plugin"], "n_candidates": 2, "n_failed": 1, "cost_usd": 0.5, "env_steps": 99,
              "wall_s": 7.0, "stop_reason": "budget"}
    (run / "result.json").write_text(json.dumps(result))
    (run / "candidates" / "it1-c0" / "candidate.json").write_text(json.dumps({
        "id": "it1-c0", "iteration": 1, "index": 0, "parent_id": "it0-c9", "operator": "mutate", "status": "trained",
        "failure": None, "fitness": 0.5, "score": 0.4, "final_score": 0.3, "env_steps": 64}))
    (run / "candidates" / "it1-c0" / "reward.py").write_text("def compute_reward(): pass\n")
    (run / "candidates" / "it1-c1" / "candidate.json").write_text(json.dumps({
        "id": "it1-c1", "iteration": 1, "index": 1, "status": "failed", "failure": {"kind": "crashed"}}))
    (run / "llm_calls.jsonl").write_text("".join(json.dumps(c) + "\n" for c in calls or []))
    return run


def _call(key: str, purpose: str = "reward", **extra) -> dict:
    return {"key": key, "purpose": purpose, "iteration": 1, "sample_index": 0, "provider": "fake-api",
            "model": "m1", **extra}


def _answer(cache: ResponseCache, key: str, text: str) -> None:
    cache.put(key, {"created": 0.0, "provider": "fake-api", "model": "m1",
                    "request": {"purpose": "reward", "messages": [{"role": "user", "content": text}]},
                    "response": {"text": text, "input_tokens": 3, "output_tokens": 4, "cost_usd": 0.01}})


# -- names and runs ------------------------------------------------------------------------------------------
def test_a_cell_is_named_method_env_with_dashes_and_seed():
    assert cell_id({"method": "eureka", "env": "metaworld/reach/v3", "seed": 4}) == "eureka/metaworld-reach-v3/seed4"


def test_runs_are_found_in_a_sweep_folder_in_path_order_once_each(tmp_path):
    sweep = tmp_path / "sweep"
    b, a = _run(sweep / "x", "b"), _run(sweep / "x", "a")
    (sweep / "half").mkdir()
    (sweep / "half" / "status.json").write_text("{}")  # no config.yaml: not a run
    cfg_only = tmp_path / "cfg_only"
    cfg_only.mkdir()
    (cfg_only / "config.yaml").write_text("{}")  # no status.json: a folder holding no run
    assert _runs([sweep, a, str(b)]) == [a, b]
    assert _runs([cfg_only]) == []
    with pytest.raises(BundleError, match=f"^{tmp_path / 'nothing'}: neither a run directory nor a folder holding"):
        _runs([tmp_path / "nothing"])
    file = tmp_path / "file.txt"
    file.write_text("x")
    with pytest.raises(BundleError, match="neither a run directory"):
        _runs([file])


def test_a_run_is_a_directory_with_both_config_and_status_files(tmp_path):
    run = _run(tmp_path)
    (run / "config.yaml").unlink()
    (run / "config.yaml").mkdir()  # a folder named config.yaml: not a run
    assert _runs([run]) == []


# -- files ---------------------------------------------------------------------------------------------------
def test_a_run_keeps_its_text_records_and_leaves_out_state_trackers_pickles_and_unknown_files(tmp_path):
    run = tmp_path / "run"
    for rel in ("config.yaml", "status.json", "environment.json", "events.jsonl", "lost_llm_calls.jsonl",
                "result.json", ".hydra/overrides.yaml", ".hydra/hydra.yaml", "search_state.json", "run.lock",
                "tracker.json", "tensorboard/events.txt", "wandb/run.txt", "mlruns/m.txt", "notes.md", "a.csv",
                "b.txt", "c.py", "d.jsonl", "e.yaml", "f.log", "g.tmp", "h.pt", "i.pth", "j.zip", "k.pkl",
                "c/policy.npz", "c/l.lock", "c/clip.mp4", "c/plot.png", "c/roll.npz", "c/m.bin", "c/n.json.bak"):
        (run / rel).parent.mkdir(parents=True, exist_ok=True)
        (run / rel).write_bytes(b"x")
    np.savez(run / "c" / "roll.npz", a=np.arange(3))
    np.savez(run / "c" / "policy.npz", a=np.arange(3))
    os.symlink(run / "a.csv", run / "link.csv")
    keep, left = _files(run, with_media=False)
    assert keep == [".hydra/overrides.yaml", "a.csv", "b.txt", "c.py", "config.yaml", "d.jsonl", "e.yaml",
                    "environment.json", "events.jsonl", "lost_llm_calls.jsonl", "notes.md", "result.json",
                    "status.json"]
    assert left == [".hydra/hydra.yaml", "c/clip.mp4", "c/l.lock", "c/m.bin", "c/n.json.bak", "c/plot.png",
                    "c/policy.npz", "c/roll.npz", "f.log", "g.tmp", "h.pt", "i.pth", "j.zip", "k.pkl", "mlruns/m.txt",
                    "run.lock", "search_state.json", "tensorboard/events.txt", "tracker.json", "wandb/run.txt"]
    keep_media, left_media = _files(run, with_media=True)
    assert set(keep_media) - set(keep) == {"c/clip.mp4", "c/plot.png", "c/roll.npz"}
    assert set(left) - set(left_media) == {"c/clip.mp4", "c/plot.png", "c/roll.npz"}


def test_only_an_npz_whose_arrays_all_load_without_pickle_counts_as_media(tmp_path):
    np.savez(tmp_path / "plain.npz", a=np.arange(3), b=np.ones(2))
    np.savez(tmp_path / "late_object.npz", a=np.arange(3), b=np.array([{"x": 1}], dtype=object))
    (tmp_path / "torn.npz").write_bytes(b"PK\x03\x04 not a zip")
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (3,".ljust(118) + "\n"  # unterminated
    with zipfile.ZipFile(tmp_path / "bad_header.npz", "w") as zf:
        zf.writestr("a.npy", b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + bytes(24))
    (tmp_path / "clip.mp4").write_bytes(b"\x80\x04N.")  # not an npz: not loaded
    assert _no_pickle(tmp_path / "plain.npz") and _no_pickle(tmp_path / "clip.mp4")
    assert not _no_pickle(tmp_path / "late_object.npz")
    assert not _no_pickle(tmp_path / "torn.npz")  # BadZipFile
    assert not _no_pickle(tmp_path / "bad_header.npz")  # tokenize.TokenError from numpy's header parser


# -- the response cache a run used ---------------------------------------------------------------------------
def test_the_cache_is_the_one_named_then_the_runs_own_then_the_default(tmp_path, monkeypatch):
    monkeypatch.setenv("BIRD_CACHE_DIR", str(tmp_path / "default"))
    run = _run(tmp_path, config="llm:\n  cache_dir: " + str(tmp_path / "runs_cache") + "\n")
    assert _cache_for(run, tmp_path / "named").root == tmp_path / "named"
    assert _cache_for(run, None).root == tmp_path / "runs_cache"
    for config in ("method: eureka\n", "llm:\n  cache_dir: ''\n", "llm:\n  cache_dir: 3\n", "llm: null\n"):
        (run / "config.yaml").write_text(config)
        assert _cache_for(run, None).root == tmp_path / "default", config


def test_a_config_that_is_not_data_refuses_the_run_by_name(tmp_path):
    run = _run(tmp_path, config="llm:\n  cache_dir: ${oc.env:HOME}\n")
    with pytest.raises(BundleError, match=f"^{run}: .*interpolation"):
        _cache_for(run, None)
    (run / "config.yaml").write_text("llm: [1, 2]\n")  # llm is not a mapping
    with pytest.raises(BundleError, match=f"^{run}: "):
        _cache_for(run, None)


# -- the candidates' index rows ------------------------------------------------------------------------------
def test_candidate_rows_hold_each_record_and_its_reward_file(tmp_path):
    run = _run(tmp_path)
    code = (run / "candidates" / "it1-c0" / "reward.py").read_bytes()
    assert _candidate_rows("eureka/mujoco-hopper/seed3", run) == [
        {"cell": "eureka/mujoco-hopper/seed3", "id": "it1-c0", "iteration": 1, "index": 0, "parent_id": "it0-c9",
         "operator": "mutate", "status": "trained", "failure_kind": None, "fitness": 0.5, "score": 0.4,
         "final_score": 0.3, "env_steps": 64,
         "reward_path": "runs/eureka/mujoco-hopper/seed3/candidates/it1-c0/reward.py", "reward_sha256": sha256(code)},
        {"cell": "eureka/mujoco-hopper/seed3", "id": "it1-c1", "iteration": 1, "index": 1, "parent_id": None,
         "operator": None, "status": "failed", "failure_kind": "crashed", "fitness": None, "score": None,
         "final_score": None, "env_steps": None, "reward_path": None, "reward_sha256": None}]


def test_an_unreadable_candidate_refuses_the_run_naming_the_candidate(tmp_path):
    run = _run(tmp_path)
    (run / "candidates" / "it1-c1" / "candidate.json").write_text("{not json" + "x" * 400)
    with pytest.raises(BundleError) as err:
        _candidate_rows("c", run)
    message = str(err.value)
    assert message.startswith(f"{run}: candidates/it1-c1 is not packed (") and message.endswith(")")
    assert len(message) <= len(f"{run}: candidates/it1-c1 is not packed ()") + 200
    (run / "candidates" / "it1-c1" / "candidate.json").write_text("{}")
    (run / "candidates" / "it1-c1" / "reward.py").mkdir()  # a reward.py that cannot be read
    with pytest.raises(BundleError, match="candidates/it1-c1 is not packed"):
        _candidate_rows("c", run)


# -- replayable or not ---------------------------------------------------------------------------------------
def test_a_transcript_is_replayable_only_without_missing_unkeyed_or_failed_calls():
    assert _replayable(Transcript()) == (True, None)
    assert _replayable(Transcript(missing=[{}, {}], unkeyed=1, failed=[{}])) == (
        False, "2 answer(s) missing from the response cache when packed")
    assert _replayable(Transcript(unkeyed=3, failed=[{}])) == (
        False, "3 call(s) journalled without a request key (a run older than bird.bundle)")
    assert _replayable(Transcript(failed=[{}, {}])) == (
        False, "2 call(s) failed when recorded (a failure has no answer to replay)")


# -- pack ----------------------------------------------------------------------------------------------------
def test_pack_writes_the_manifest_cells_transcripts_and_index_of_its_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("BIRD_CACHE_DIR", str(tmp_path / "unused"))
    cache = ResponseCache(tmp_path / "cache")
    _answer(cache, KEY_A, "first")
    _answer(cache, KEY_B, "second")
    calls = [_call(KEY_A), {"provider": "offline", "key": None}, _call(KEY_B, "judge_score", sample_index=2)]
    run = _run(tmp_path / "runs", calls=calls)
    (run / "environment.json").write_text("{}")
    (run / "f.log").write_text("log")
    out = tmp_path / "deep" / "b.bird"
    result = pack([run], out, cache_dir=tmp_path / "cache")
    cid = "eureka/mujoco-hopper/seed3"
    assert result.path == out and result.size == out.stat().st_size
    assert result.left_out == [f"runs/{cid}/f.log"]
    b = Bundle(out)
    m = b.manifest
    assert (m["format"], m["schema_version"], m["with_media"], m["left_out"]) == (FORMAT, SCHEMA_VERSION, False,
                                                                                   [f"runs/{cid}/f.log"])
    assert m["created"].endswith("+00:00") and len(m["created"]) == 25
    assert m["bird"] == m["packed_on"]["bird"]
    assert m["cells"] == result.cells == [{
        "id": cid, "method": "eureka", "env": "mujoco/hopper", "seed": 3, "budget": "smoke", "config_hash": "h1",
        "returned_score": 0.25, "generator": {"provider": "fake-api"}, "llm_calls": 3, "determinism": "bit-for-bit",
        "transcript": {"answers": 2, "missing": 0, "failed": 0, "unkeyed": 0, "deterministic_calls": 1},
        "plugins": ["my_plugin"], "environment_recorded": True, "replayable": True, "why_not": None}]
    with zipfile.ZipFile(out) as zf:
        members = {n: zf.read(n) for n in zf.namelist() if n != MANIFEST}
    assert m["files"] == [{"path": n, "sha256": sha256(d), "size": len(d)} for n, d in sorted(members.items())]
    assert members[f"runs/{cid}/result.json"] == (run / "result.json").read_bytes()
    lines = members[f"transcripts/{cid}.jsonl"].decode().splitlines()
    assert [json.loads(ln)["key"] for ln in lines] == [KEY_A, KEY_B]
    assert lines[0] == json.dumps(json.loads(lines[0]), sort_keys=True)
    runs = b.table("runs").to_dict("records")
    assert runs == [{"cell": cid, "method": "eureka", "env": "mujoco/hopper", "suite": "mujoco", "task": "hopper",
                     "seed": 3, "budget": "smoke", "config_hash": "h1", "returned_score": 0.25, "n_candidates": 2,
                     "n_failed": 1, "llm_calls": 3, "cost_usd": 0.5, "env_steps": 99, "wall_s": 7.0,
                     "stop_reason": "budget", "replayable": True}]
    assert list(b.table("candidates")["id"]) == ["it1-c0", "it1-c1"]
    calls_table = b.table("llm_calls").to_dict("records")
    assert [(c["cell"], c["seq"], c["key"], c["purpose"], c["iteration"], c["sample_index"], c["provider"], c["model"],
             c["input_tokens"], c["output_tokens"], c["cost_usd"]) for c in calls_table] == [
        (cid, 0, KEY_A, "reward", 1, 0, "fake-api", "m1", 3, 4, 0.01),
        (cid, 2, KEY_B, "judge_score", 1, 2, "fake-api", "m1", 3, 4, 0.01)]
    assert [c["response_sha256"] for c in calls_table] == [json.loads(ln)["response_sha256"] for ln in lines]
    for table in ("runs", "candidates", "llm_calls"):  # plain tables: the rows' columns, no pandas index recorded
        schema = pq.read_schema(io.BytesIO(members[f"index/{table}.parquet"]))
        assert schema.pandas_metadata["index_columns"] == [], table


def test_pack_with_media_says_so_in_its_manifest(tmp_path):
    run = _run(tmp_path / "runs")
    np.savez(run / "roll.npz", a=np.arange(3))
    result = pack([run], tmp_path / "m.bird", with_media=True, cache_dir=tmp_path / "cache")
    assert Bundle(result.path).manifest["with_media"] is True
    assert "runs/eureka/mujoco-hopper/seed3/roll.npz" in Bundle(result.path).names


def test_pack_uses_the_runs_own_cache_when_none_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("BIRD_CACHE_DIR", str(tmp_path / "default"))
    cache = ResponseCache(tmp_path / "runs_cache")
    _answer(cache, KEY_A, "first")
    run = _run(tmp_path / "runs", calls=[_call(KEY_A)], config=f"llm:\n  cache_dir: {tmp_path / 'runs_cache'}\n")
    [cell] = pack([run], tmp_path / "b.bird").cells
    assert cell["replayable"] and cell["transcript"]["answers"] == 1


def test_two_runs_of_one_cell_are_told_apart_by_config_hash_and_a_third_is_refused(tmp_path):
    a = _run(tmp_path / "runs", "a", config_hash="h1")
    b = _run(tmp_path / "runs", "b", config_hash="h2")
    cells = pack([a, b], tmp_path / "two.bird", cache_dir=tmp_path / "cache").cells
    assert [c["id"] for c in cells] == ["eureka/mujoco-hopper/seed3", "eureka/mujoco-hopper/seed3-h2"]
    assert "runs/eureka/mujoco-hopper/seed3-h2/result.json" in Bundle(tmp_path / "two.bird").names
    c = _run(tmp_path / "runs", "c", config_hash="h2")
    with pytest.raises(BundleError, match=f"^{c}: a second run of eureka/mujoco-hopper/seed3-h2 with the same config; "
                                          "pack one of them$"):
        pack([a, b, c], tmp_path / "three.bird", cache_dir=tmp_path / "cache")
    assert not (tmp_path / "three.bird").exists()


def test_pack_refuses_no_runs_and_runs_that_did_not_complete_naming_each(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(BundleError, match=f"^no run directories under {tmp_path / 'empty'}, {tmp_path / 'empty'}$"):
        pack([tmp_path / "empty", tmp_path / "empty"], tmp_path / "x.bird")
    run = _run(tmp_path / "runs", status="running")
    with pytest.raises(BundleError, match=f"^{run}: status 'running'; only completed runs can be packed$"):
        pack([run], tmp_path / "x.bird", cache_dir=tmp_path / "cache")
    (run / "result.json").write_text("{not json")
    with pytest.raises(BundleError, match=f"^{run}: no readable result.json; only completed runs can be packed$"):
        pack([run], tmp_path / "x.bird", cache_dir=tmp_path / "cache")
    assert not (tmp_path / "x.bird").exists()


def test_missing_answers_refuse_the_pack_unless_allowed_and_the_cell_says_why(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    _answer(cache, KEY_A, "first")
    run = _run(tmp_path / "runs", "r1", calls=[_call(KEY_A), _call(KEY_B), _call(KEY_C, error="boom")])
    other = _run(tmp_path / "runs", "r2", seed=4, calls=[_call(KEY_C)])
    with pytest.raises(BundleError) as err:
        pack([run, other], tmp_path / "x.bird", cache_dir=tmp_path / "cache")
    assert str(err.value) == (
        "cannot pack a replayable bundle:\n"
        f"  {run} (eureka/mujoco-hopper/seed3): 1 answer(s) missing from the response cache when packed; pass "
        "--cache-dir (the cache the run used) or --allow-incomplete\n"
        f"  {other} (eureka/mujoco-hopper/seed4): 1 answer(s) missing from the response cache when packed; pass "
        "--cache-dir (the cache the run used) or --allow-incomplete")
    assert not (tmp_path / "x.bird").exists()
    first, second = pack([run, other], tmp_path / "x.bird", cache_dir=tmp_path / "cache", allow_incomplete=True).cells
    assert (first["replayable"], first["why_not"]) == (False, "1 answer(s) missing from the response cache when packed")
    assert first["transcript"] == {"answers": 1, "missing": 1, "failed": 1, "unkeyed": 0, "deterministic_calls": 0}
    assert Bundle(tmp_path / "x.bird").table("runs")["replayable"].tolist() == [False, False]


def test_failed_or_unkeyed_calls_pack_but_are_not_replayable(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    _answer(cache, KEY_A, "first")
    run = _run(tmp_path / "runs", calls=[_call(KEY_A), _call(KEY_C, error="boom"), {"provider": "fake-api"}])
    [cell] = pack([run], tmp_path / "x.bird", cache_dir=tmp_path / "cache").cells
    assert (cell["replayable"], cell["why_not"]) == (
        False, "1 call(s) journalled without a request key (a run older than bird.bundle)")
    assert cell["environment_recorded"] is False and cell["plugins"] == ["my_plugin"]


def test_a_run_file_that_cannot_be_read_refuses_the_run_naming_the_file(tmp_path, monkeypatch):
    import bird.files

    run = _run(tmp_path / "runs")
    (run / "notes.txt").write_bytes(b"x" * 5000)
    monkeypatch.setitem(bird.files.LIMITS, "media", 4096)  # every other file of the run is smaller
    with pytest.raises(BundleError, match=f"^{run}: notes.txt is not packed \\(.*at most 4096 bytes\\)$"):
        pack([run], tmp_path / "x.bird", cache_dir=tmp_path / "cache")
