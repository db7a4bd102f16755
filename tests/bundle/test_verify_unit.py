"""`verify` (bird/bundle/verify.py) and the transcript checks it makes (bird/bundle/transcript.py) on small bundles made
here, one problem each, beside the intact bundle that verifies (the packed smoke runs: test_bundle_unit.py,
test_bundle_tampering.py)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from bird.bundle.archive import FORMAT, MANIFEST, SCHEMA_VERSION, sha256, write_archive
from bird.bundle.transcript import _answer_hash, answer_ok, entry_key, key_problem
from bird.bundle.verify import REQUIRED_RUN_FILES, _expectation, verify
from bird.environment import describe_environment
from bird.llm.base import Message, Request, record_key

CELL = "m/t/seed0"


def _line(seq: int = 0, text: str = "write a reward", answer: str = "def f(): ...") -> dict:
    request = Request("reward", (Message("user", text),), sample_index=seq).record()
    response = {"text": answer}
    return {"seq": seq, "key": record_key("openai", "gpt", request), "purpose": "reward", "iteration": 1,
            "sample_index": seq, "provider": "openai", "model": "gpt", "request": request, "response": response,
            "response_sha256": _answer_hash(response)}


def _members(lines=None, env: dict | None = None, drop: tuple[str, ...] = ()) -> dict[str, bytes]:
    lines = [_line(0), _line(1, answer="def g(): ...")] if lines is None else lines
    out = {f"runs/{CELL}/{name}": b"{}" for name in REQUIRED_RUN_FILES}
    out[f"transcripts/{CELL}.jsonl"] = "".join(json.dumps(x) + "\n" for x in lines).encode()
    if env is not None:
        out[f"runs/{CELL}/environment.json"] = json.dumps(env).encode()
    return {k: v for k, v in out.items() if not any(k.endswith(d) for d in drop)}


def _bundle(tmp_path: Path, members: dict[str, bytes] | None = None, cell: dict | None = None,
            listed: dict[str, bytes] | None = None, name: str = "b.bird", **manifest) -> Path:
    members = _members() if members is None else members
    listed = members if listed is None else listed
    cell = {"id": CELL, "replayable": True, "transcript": {"answers": 2}} if cell is None else cell
    path = tmp_path / name
    write_archive(path, {"format": FORMAT, "schema_version": SCHEMA_VERSION, "cells": [cell],
                         "files": [{"path": n, "sha256": sha256(d), "size": len(d)} for n, d in sorted(listed.items())],
                         **manifest}, members.items())
    return path


def _problems(path: Path) -> list[str]:
    return [p.replace(str(path), "B") for p in verify(path).problems]


# --- the files --------------------------------------------------------------------------------------------------
def test_an_intact_bundle_verifies_and_says_what_each_cell_replays(tmp_path):
    path = _bundle(tmp_path)
    report = verify(path)
    assert report.ok and report.problems == [] and report.schema_version == 1
    assert report.cells == [{"id": CELL, "replay": "replays from 2 recorded answer(s); results within tolerance",
                             "expect": "within tolerance",
                             "why": "the run recorded no environment.json (bit-for-bit not checkable)"}]
    assert report.render().splitlines() == [
        f"{path}: schema_version 1, 1 cell(s)",
        f"  {CELL}: replays from 2 recorded answer(s); results within tolerance (the run recorded no "
        "environment.json (bit-for-bit not checkable))", "verified: every file matches the manifest"]


def test_unlisted_missing_resized_and_edited_members_are_each_named(tmp_path):
    members = _members()
    listed = dict(members)
    listed["runs/m/t/seed0/missing.txt"] = b"gone"
    listed[f"runs/{CELL}/config.yaml"] = b"{}x"  # listed one byte larger
    listed[f"runs/{CELL}/task.json"] = b"[]"  # same size, other bytes
    members["runs/m/t/seed0/planted.py"] = b"import os"
    path = _bundle(tmp_path, members, listed=listed)
    assert _problems(path) == [
        "runs/m/t/seed0/planted.py: in the archive but not in the manifest",
        f"runs/{CELL}/config.yaml: content differs from its manifest hash (edited or corrupt: 2 bytes uncompressed, "
        "the manifest says 3; not read)",
        "runs/m/t/seed0/missing.txt: listed in the manifest but missing",
        f"runs/{CELL}/task.json: content differs from its manifest hash (edited or corrupt)"]
    report = verify(path)
    assert not report.ok and report.render().endswith("FAILED: 4 problem(s)")
    assert "  PROBLEM runs/m/t/seed0/planted.py: in the archive but not in the manifest" in report.render()


def test_a_corrupt_member_is_named_as_unreadable(tmp_path):
    members = _members()
    members[f"runs/{CELL}/result.json"] = b'{"returned_score": 0.123456789}' * 50
    path = _bundle(tmp_path, members)
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(f"runs/{CELL}/result.json")
    at = info.header_offset + 30 + len(info.filename) + 5
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    [problem] = _problems(path)
    assert problem.startswith(f"runs/{CELL}/result.json: cannot be read (")


def test_malformed_manifest_entries_are_problems(tmp_path):
    path = _bundle(tmp_path)
    with zipfile.ZipFile(path) as zf:
        manifest = json.loads(zf.read(MANIFEST))
    manifest["files"].append({"path": "../x", "sha256": "0" * 64, "size": 1})
    path = tmp_path / "c.bird"
    write_archive(path, manifest, _members().items())
    assert _problems(path) == ["manifest.json: files[6] is not a {path, sha256, size} entry ({'path': '../x', "
                               "'sha256': '0000000000000000000000000000000000000000000000000000)"]


@pytest.mark.parametrize("name", REQUIRED_RUN_FILES)
def test_a_cell_without_one_of_its_required_files_is_a_problem(tmp_path, name):
    path = _bundle(tmp_path, _members(drop=(name,)))
    assert _problems(path) == [f"runs/{CELL}: missing {name}"]


def test_a_cell_without_its_transcript_is_a_problem_named_once(tmp_path):
    members = {k: v for k, v in _members().items() if not k.startswith("transcripts/")}
    assert _problems(_bundle(tmp_path, members)) == [f"transcripts/{CELL}.jsonl: missing"]


# --- the transcript ---------------------------------------------------------------------------------------------
def test_an_edited_answer_is_named_by_its_line_call_purpose_and_iteration(tmp_path):
    edited = _line(1, answer="def g(): ...")
    edited["response"] = {"text": "import os"}
    path = _bundle(tmp_path, _members([_line(0), edited]))
    assert _problems(path) == [f"transcripts/{CELL}.jsonl line 2 (call #1, key {edited['key'][:16]}..., purpose reward, "
                               "iteration 1): the answer differs from the one recorded"]


def test_an_edited_request_is_named_and_a_key_that_is_no_request_key_too(tmp_path):
    edited, bad_key = _line(0), _line(1)
    edited["request"]["messages"][0]["content"] = "leak the key"
    bad_key["key"] = "../../etc/passwd"
    problems = _problems(_bundle(tmp_path, _members([edited, bad_key])))
    assert problems == [
        f"transcripts/{CELL}.jsonl line 1 (call #0, key {edited['key'][:16]}..., purpose reward, iteration 1): the "
        "request differs from the one its key was made from",
        f"transcripts/{CELL}.jsonl line 2 (call #1, key ../../etc/passwd..., purpose reward, iteration 1): the key "
        "'../../etc/passwd' is not a request key (64 lowercase hex digits)"]


def test_transcript_lines_that_are_not_objects_or_lack_fields_are_problems_not_errors(tmp_path):
    no_response = _line(1)
    del no_response["response"]
    path = _bundle(tmp_path, _members([[1, 2], no_response]))
    assert _problems(path) == [
        f"transcripts/{CELL}.jsonl line 1: not a JSON object",
        f"transcripts/{CELL}.jsonl line 2 (call #1, key {no_response['key'][:16]}..., purpose reward, iteration 1): "
        "malformed (KeyError: 'response')"]


def test_a_transcript_that_is_not_json_lines_is_a_problem(tmp_path):
    members = _members()
    members[f"transcripts/{CELL}.jsonl"] = b'{"seq": 0}\n{not json\n'
    assert _problems(_bundle(tmp_path, members)) == [f"transcripts/{CELL}.jsonl: not JSON lines (Expecting property "
                                                     "name enclosed in double quotes: line 1 column 2 (char 1))"]
    members[f"transcripts/{CELL}.jsonl"] = b"\xff\xfe\n"
    assert _problems(_bundle(tmp_path, members, name="u.bird"))[0].startswith(f"transcripts/{CELL}.jsonl: not JSON "
                                                                               "lines (")


def test_a_transcript_that_fails_its_hash_is_read_again_and_checked_line_by_line(tmp_path):
    members = _members([{"seq": 0}])
    listed = dict(members)
    listed[f"transcripts/{CELL}.jsonl"] = b"other"
    problems = _problems(_bundle(tmp_path, members, listed=listed))
    assert problems[0].startswith(f"transcripts/{CELL}.jsonl: content differs from its manifest hash")
    assert problems[1].startswith(f"transcripts/{CELL}.jsonl line 1 (call #0, key None...") and "malformed" in problems[1]


def test_the_index_decides_which_answer_a_line_should_have(tmp_path):
    import io

    import pandas as pd

    line = _line(0)
    other = pd.DataFrame([{"cell": CELL, "seq": 0, "response_sha256": "0" * 64}])
    buf = io.BytesIO()
    other.to_parquet(buf)
    members = {**_members([line]), "index/llm_calls.parquet": buf.getvalue()}
    assert _problems(_bundle(tmp_path, members)) == [
        f"transcripts/{CELL}.jsonl line 1 (call #0, key {line['key'][:16]}..., purpose reward, iteration 1): the "
        "answer differs from the one recorded"]
    same = pd.DataFrame([{"cell": CELL, "seq": 0, "response_sha256": line["response_sha256"]}])
    buf = io.BytesIO()
    same.to_parquet(buf)
    members["index/llm_calls.parquet"] = buf.getvalue()
    assert _problems(_bundle(tmp_path, members, name="ok.bird")) == []


def test_key_checks_of_a_transcript_line():
    line = _line(0)
    assert key_problem(line) is None and entry_key(line) == line["key"] and answer_ok(line)
    assert key_problem({**line, "key": line["key"].upper()}).endswith("is not a request key (64 lowercase hex digits)")
    assert key_problem({**line, "key": "f" * 64}) == "the request differs from the one its key was made from"
    assert key_problem({**line, "request": None}) == ("the key cannot be recomputed from the request (the line holds "
                                                      "no request)")
    assert key_problem({**line, "model": 3}) == ("the key cannot be recomputed from the request (the line names no "
                                                 "provider and model)")
    assert key_problem({**line, "provider": None}).endswith("(the line names no provider and model)")
    with pytest.raises(ValueError, match="holds no request"):
        entry_key([line])  # type: ignore[arg-type]
    assert not answer_ok({**line, "response": {"text": "other"}})
    assert not answer_ok({k: v for k, v in line.items() if k != "response_sha256"})


# --- what a replay can give -------------------------------------------------------------------------------------
def test_a_cell_that_cannot_replay_is_reported_with_its_reason(tmp_path):
    path = _bundle(tmp_path, cell={"id": CELL, "replayable": False, "why_not": "x" * 400})
    assert verify(path).cells == [{"id": CELL, "replay": "cannot replay", "why": "x" * 300}]
    assert f"  {CELL}: cannot replay ({'x' * 300})" in verify(path).render()


def test_a_cell_without_recorded_answers_replays_from_its_deterministic_generator(tmp_path):
    for transcript in ({"answers": 0}, {"answers": "2"}, None, "x"):
        path = _bundle(tmp_path, cell={"id": CELL, "replayable": True, "transcript": transcript})
        assert verify(path).cells[0]["replay"] == ("replays from a deterministic generator (no answers needed); "
                                                   "results within tolerance")


def test_the_recorded_environment_decides_bit_for_bit_or_within_tolerance(tmp_path):
    here = describe_environment()
    path = _bundle(tmp_path, _members(env={"sessions": [{"old": 1}, here]}))
    cell = verify(path).cells[0]
    assert (cell["expect"], cell["why"]) == ("bit-for-bit", "deterministic learners on the same CPU and packages")
    other = {**here, "packages": {**here["packages"], "numpy": "0.0.1"}}
    path = _bundle(tmp_path, _members(env={"sessions": [here, other]}), name="o.bird")
    cell = verify(path).cells[0]
    assert cell["expect"] == "within tolerance"
    assert cell["why"].startswith("this machine differs from the recording one: numpy: 0.0.1 vs ")


def test_many_machine_differences_are_cut_to_four():
    here = describe_environment()
    recorded = {**here, "packages": {f"p{i}": "1" for i in range(6)}}
    _, why = _expectation({}, recorded, here)
    assert why.count(" vs ") == 4


def test_sources_of_nondeterminism_make_a_cell_within_tolerance_whatever_the_machine():
    here = describe_environment()
    assert _expectation({"determinism": {"sources": ["GPU", "threads"]}}, here, here) == ("within tolerance",
                                                                                          "GPU; threads")
    assert _expectation({"determinism": {"sources": "GPU"}}, here, here) == ("within tolerance", "GPU")
    assert _expectation({"determinism": {"sources": []}}, here, here)[0] == "bit-for-bit"
    assert _expectation({"determinism": "yes"}, here, here)[0] == "bit-for-bit"


@pytest.mark.parametrize("env", [{"sessions": "x"}, {"sessions": [1]}, [1], "text"])
def test_a_malformed_environment_record_is_a_problem(tmp_path, env):
    path = _bundle(tmp_path, _members(env=env))
    [problem] = _problems(path)
    assert problem.startswith(f"runs/{CELL}/environment.json: malformed (")
    assert verify(path).cells[0]["why"] == "the run recorded no environment.json (bit-for-bit not checkable)"


def test_an_environment_record_with_no_sessions_is_none(tmp_path):
    path = _bundle(tmp_path, _members(env={"sessions": []}))
    assert _problems(path) == [] and verify(path).cells[0]["why"].startswith("the run recorded no environment.json")


def test_an_environment_whose_fields_have_the_wrong_types_is_a_problem_not_an_error(tmp_path):
    path = _bundle(tmp_path, _members(env={"sessions": [{"cpu": "x", "packages": []}]}))
    [problem] = _problems(path)
    assert problem.startswith(f"runs/{CELL}/environment.json: malformed (AttributeError: ")
    assert verify(path).cells[0]["why"] == "the recorded environment is malformed"
