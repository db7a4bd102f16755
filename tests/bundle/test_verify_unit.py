"""`verify` (bird/bundle/verify.py) and the transcript checks it makes (bird/bundle/transcript.py) on small bundles made
here, one problem each, beside the intact bundle that verifies (the packed smoke runs: test_bundle_unit.py,
test_bundle_tampering.py)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from bird.bundle.archive import FORMAT, MANIFEST, SCHEMA_VERSION, sha256, write_archive
from bird.bundle.transcript import (
    _answer_hash,
    answer_ok,
    closest_difference,
    entry_key,
    first_difference,
    key_problem,
)
from bird.bundle.verify import REQUIRED_RUN_FILES, _expectation, verify
from bird.environment import describe_environment, same_machine
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


# --- how a new request differs from the recorded ones (what replay prints) -----------------------------------------
def _recorded(request: Request, seq: int = 0, iteration: int = 1) -> dict:
    record = request.record()
    return {"seq": seq, "key": record_key("openai", "gpt", record), "purpose": request.purpose,
            "iteration": iteration, "provider": "openai", "model": "gpt", "request": record}


BASE = Request("reward", (Message("system", "be brief"), Message("user", "write a reward")), temperature=0.5,
               max_tokens=100, sample_index=1, seed=3)


@pytest.mark.parametrize(("change", "at", "what"), [
    ({"purpose": "mutation"}, 2, "purpose: recorded 'reward', replayed 'mutation'"),
    ({"seed": 4}, 3, "seed: recorded 3, replayed 4"),
    ({"sample_index": 2}, 4, "sample_index: recorded 1, replayed 2"),
    ({"temperature": 0.7}, 5, "temperature: recorded 0.5, replayed 0.7"),
    ({"reasoning_effort": "high"}, 6, "reasoning_effort: recorded 'none', replayed 'high'"),
    ({"max_tokens": 99}, 7, "max_tokens: recorded 100, replayed 99"),
    ({"messages": (Message("system", "be brief"),)}, 8, "len(messages): recorded 2, replayed 1"),
    ({"messages": (Message("user", "be brief"), Message("user", "write a reward"))}, 9,
     "messages[0].role: recorded 'system', replayed 'user'"),
    ({"messages": (Message("system", "be brief"), Message("user", "write a REWARD"))}, 13,
     "messages[1].content: recorded 'write a reward', replayed 'write a REWARD'"),
    ({"messages": (Message("system", "be brief"), Message("user", "write a reward", (b"png",)))}, 14,
     "messages[1].n_images: recorded 0, replayed 1"),
])
def test_the_first_field_a_new_request_changes_is_named_with_both_values(change, at, what):
    import dataclasses

    assert first_difference(_recorded(BASE), "openai", "gpt", dataclasses.replace(BASE, **change)) == (at, what)


def test_the_provider_and_model_are_the_first_fields_compared():
    assert first_difference(_recorded(BASE), "anthropic", "gpt", BASE) == (
        0, "provider: recorded 'openai', replayed 'anthropic'")
    assert first_difference(_recorded(BASE), "openai", "o3", BASE) == (1, "model: recorded 'gpt', replayed 'o3'")


def test_a_recorded_message_without_an_image_count_has_none():
    recorded = _recorded(BASE)
    for message in recorded["request"]["messages"]:
        del message["n_images"]  # transcripts written before images were counted
    assert first_difference(recorded, "openai", "gpt", BASE)[0] == 15
    with_image = Request("reward", (Message("system", "be brief", (b"png",)), Message("user", "write a reward")),
                         temperature=0.5, max_tokens=100, sample_index=1, seed=3)
    assert first_difference(recorded, "openai", "gpt", with_image) == (
        11, "messages[0].n_images: recorded 0, replayed 1")


def test_requests_that_differ_only_in_their_images_bytes_differ_in_no_field():
    import dataclasses

    one = dataclasses.replace(BASE, messages=(Message("user", "look", (b"png-1",)),))
    other = dataclasses.replace(BASE, messages=(Message("user", "look", (b"png-2",)),))
    assert first_difference(_recorded(one), "openai", "gpt", other) == (
        12, "no field differs (the key does: the request carries images whose bytes differ)")


def _long(text: str) -> Request:
    import dataclasses

    return dataclasses.replace(BASE, messages=(Message("user", text),))


def test_a_long_text_is_shown_around_its_first_differing_character():
    recorded = "".join(chr(ord("a") + i % 26) for i in range(300))
    changed = recorded[:150] + "#" + recorded[151:]
    n, what = first_difference(_recorded(_long(recorded)), "openai", "gpt", _long(changed))
    assert n == 10
    assert what == (f"messages[0].content at character 150: recorded {recorded[110:210]!r}, replayed "
                    f"{changed[110:210]!r}")
    early = "#" + recorded[1:]
    assert first_difference(_recorded(_long(recorded)), "openai", "gpt", _long(early))[1] == (
        f"messages[0].content at character 0: recorded {recorded[:60]!r}, replayed {early[:60]!r}")
    cut = recorded[:200]  # a prefix: the first difference is where the shorter text ends
    assert first_difference(_recorded(_long(recorded)), "openai", "gpt", _long(cut))[1] == (
        f"messages[0].content at character 200: recorded {recorded[160:260]!r}, replayed {cut[160:]!r}")


def test_texts_of_up_to_eighty_characters_are_shown_whole():
    for size, long_form in ((80, False), (81, True)):
        text = "x" * size
        what = first_difference(_recorded(_long(text)), "openai", "gpt", _long(text + "y"))[1]
        assert what.startswith("messages[0].content at character") is long_form
        if not long_form:
            assert what == f"messages[0].content: recorded {text!r}, replayed {text + 'y'!r}"


def test_the_closest_recorded_request_ranks_purpose_sample_index_iteration_agreement_then_order():
    import dataclasses

    request, iteration = BASE, 2

    def best(*lines: dict) -> str:
        return closest_difference(list(lines), "openai", "gpt", request, iteration)

    def line(seq: int, iteration: int = iteration, **change) -> dict:
        return _recorded(dataclasses.replace(request, **change), seq, iteration)

    assert best() == "the transcript records no request at all"
    # purpose before sample index
    assert "call #1 " in best(line(0, purpose="mutation"), line(1, sample_index=0))
    # sample index before iteration
    assert "call #2 " in best(line(3, sample_index=0), line(2, iteration=3))
    # iteration before how many leading fields agree
    assert "call #4 " in best(line(4, temperature=0.9), line(5, iteration=9, max_tokens=1))
    # more leading fields agreeing first
    assert "call #7 " in best(line(6, seed=9), line(7, max_tokens=1))
    # then the earliest call
    assert "call #8 " in best(line(9, seed=9), line(8, seed=9))
    chosen = line(8, seed=9)
    assert best(line(9, seed=8), chosen) == (
        f"request purpose=reward iteration=2 sample_index=1 is not in the transcript; closest recorded request: call "
        f"#8 (key {chosen['key'][:16]}..., purpose=reward, iteration=2); first differing field: seed: recorded 9, "
        "replayed 3")


def test_an_answer_hash_does_not_depend_on_key_order():
    assert _answer_hash({"b": 1, "a": 2}) == _answer_hash({"a": 2, "b": 1}) == sha256(b'{"a": 2, "b": 1}')


def test_a_long_key_that_is_no_request_key_is_quoted_cut_at_eighty_characters():
    assert key_problem({**_line(0), "key": "k" * 100}) == (f"the key {'k' * 80!r} is not a request key (64 lowercase "
                                                           "hex digits)")


def test_a_cell_with_an_empty_reason_renders_without_parentheses(tmp_path):
    path = _bundle(tmp_path, cell={"id": CELL, "replayable": False, "why_not": ""})
    assert f"  {CELL}: cannot replay" in verify(path).render().splitlines()


# --- collecting a run's transcript --------------------------------------------------------------------------------
def _journal_run(tmp_path: Path, calls: list) -> Path:
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    (run / "llm_calls.jsonl").write_text("".join(json.dumps(c) + "\n" for c in calls))
    return run


def test_a_transcript_holds_each_journalled_call_by_what_the_cache_has(tmp_path):
    from bird.bundle.transcript import collect_transcript
    from bird.llm.cache import ResponseCache

    cache = ResponseCache(tmp_path / "cache")
    answered, lost, failed = _line(0), _line(1), _line(2)
    cache.put(answered["key"], {k: answered[k] for k in ("provider", "model", "request", "response")})
    calls = [{"provider": "offline", "key": None, "purpose": "reward"},  # the offline synthesiser: not cached
             {"provider": "openai", "key": None},  # a cacheable backend journalled with key null: deterministic too
             {"provider": "openai", "purpose": "reward"},  # journalled before keys were: unkeyed
             {"provider": "openai", "purpose": "reward"},
             {"key": failed["key"], "purpose": "reward", "iteration": 3, "error": "timeout"},
             {"key": lost["key"], "purpose": "mutation", "iteration": 4},
             {"key": answered["key"], "purpose": "reward", "iteration": 1, "sample_index": 0}]
    t = collect_transcript(_journal_run(tmp_path, calls), cache)
    assert (t.deterministic_calls, t.unkeyed) == (2, 2)
    assert t.failed == [{"seq": 4, "key": failed["key"], "purpose": "reward", "iteration": 3, "error": "timeout"}]
    assert t.missing == [{"seq": 5, "key": lost["key"], "purpose": "mutation", "iteration": 4}]
    assert t.lines == [{**answered, "seq": 6}]
    # each kind of call leaves the ones after it read
    calls = [calls[4], calls[5], calls[4], calls[6]]
    t = collect_transcript(_journal_run(tmp_path, calls), cache)
    assert [f["seq"] for f in t.failed] == [0, 2] and [m["seq"] for m in t.missing] == [1] and len(t.lines) == 1


def test_a_journal_that_is_missing_unreadable_or_not_objects(tmp_path):
    from bird.bundle.archive import BundleError
    from bird.bundle.transcript import collect_transcript
    from bird.llm.cache import ResponseCache

    cache = ResponseCache(tmp_path / "cache")
    (tmp_path / "empty").mkdir()
    assert collect_transcript(tmp_path / "empty", cache).lines == []
    run = _journal_run(tmp_path, [[1]])
    with pytest.raises(BundleError, match=f"^{run / 'llm_calls.jsonl'}: a line is not a JSON object$"):
        collect_transcript(run, cache)
    (run / "llm_calls.jsonl").write_text("[" * 100 + "]" * 100 + "\n")
    with pytest.raises(BundleError, match=f"^{run / 'llm_calls.jsonl'}: not a readable journal \\(.*nested"):
        collect_transcript(run, cache)
    (run / "llm_calls.jsonl").unlink()
    (run / "llm_calls.jsonl").symlink_to(tmp_path / "gone.jsonl")  # a dangling link is not "no journal"
    with pytest.raises(BundleError, match="not a readable journal"):
        collect_transcript(run, cache)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "calls.jsonl").write_text("")
    (run / "llm_calls.jsonl").unlink()
    (run / "llm_calls.jsonl").symlink_to(tmp_path / "sub" / "calls.jsonl")  # leaves the run
    with pytest.raises(BundleError, match="leaves") as caught:
        collect_transcript(run, cache)
    reason = str(caught.value).split(": not a readable journal (", 1)[1]
    assert len(reason) == 201 and reason.endswith(")")  # the reason cut at 200 characters


def _corrupt(path: Path, *names: str) -> None:
    """Flip a byte in the deflated data of each member."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        for name in names:
            info = zf.getinfo(name)
            data[info.header_offset + 30 + len(info.filename) + 5] ^= 0xFF
    path.write_bytes(bytes(data))


TRANSCRIPT = f"transcripts/{CELL}.jsonl"
# what verify says of a bundle whose result.json and transcript are both corrupt (_two_unreadable)
TWO_UNREADABLE = [
    f"runs/{CELL}/result.json: cannot be read (runs/{CELL}/result.json cannot be read (Bad CRC-32 for file "
    f"'runs/{CELL}/result.json'))",
    f"{TRANSCRIPT}: cannot be read ({TRANSCRIPT} cannot be read (Error -3 while decompressing data: invalid code "
    "lengths set))",
    f"{TRANSCRIPT}: not checked line by line ({TRANSCRIPT} cannot be read (Error -3 while decompressing data: "
    "invalid code lengths set))"]


def _two_unreadable(folder: Path) -> Path:
    """A bundle in `folder` whose result.json and transcript (each long enough to corrupt) cannot be read."""
    members = _members()
    members[TRANSCRIPT] *= 30
    members[f"runs/{CELL}/result.json"] = b'{"returned_score": 0.123456789}' * 50
    path = _bundle(folder, members)
    _corrupt(path, f"runs/{CELL}/result.json", TRANSCRIPT)
    return path


def test_every_unreadable_member_is_named_and_a_transcript_that_cannot_be_read_is_not_checked_by_line(tmp_path):
    assert _problems(_two_unreadable(tmp_path)) == TWO_UNREADABLE


def test_every_member_that_fails_its_hash_is_named(tmp_path):
    members = _members()
    listed = dict(members)
    listed[f"runs/{CELL}/config.yaml"] = b"[]"
    listed[f"runs/{CELL}/task.json"] = b"[]"
    assert _problems(_bundle(tmp_path, members, listed=listed)) == [
        f"runs/{CELL}/{name}: content differs from its manifest hash (edited or corrupt)"
        for name in ("config.yaml", "task.json")]


def test_a_transcript_of_several_read_chunks_is_checked_whole(tmp_path):
    lines = [_line(k, answer="x" * 100_000) for k in range(15)]  # 1.5 MB: two 1 MiB chunks as it is hashed
    members = _members(lines)
    assert len(members[f"transcripts/{CELL}.jsonl"]) > 1 << 20
    assert _problems(_bundle(tmp_path, members)) == []


def test_machine_differences_are_joined_by_semicolons():
    here = describe_environment()
    recorded = {**here, "packages": {f"p{i}": "1" for i in range(6)}}
    _, why = _expectation({}, recorded, here)
    assert why.startswith("this machine differs from the recording one: ") and why.count("; ") == 3


def test_a_problem_line_shows_its_purpose_and_iteration_cut_short(tmp_path):
    line = {**_line(0), "purpose": "p" * 50, "iteration": "i" * 20}
    line["response"] = {"text": "edited"}
    assert _problems(_bundle(tmp_path, _members([line]))) == [
        f"transcripts/{CELL}.jsonl line 1 (call #0, key {line['key'][:16]}..., purpose {'p' * 40}, iteration "
        f"{'i' * 12}): the answer differs from the one recorded"]


def test_an_environment_record_whose_sessions_are_not_objects_is_named_so(tmp_path):
    assert _problems(_bundle(tmp_path, _members(env={"sessions": [1]}))) == [
        f"runs/{CELL}/environment.json: malformed (sessions is not a list of objects)"]


def test_a_cell_missing_several_required_files_names_them_all(tmp_path):
    assert _problems(_bundle(tmp_path, _members(drop=("config.yaml", "task.json")))) == [
        f"runs/{CELL}: missing config.yaml, task.json"]


def test_a_cell_that_cannot_replay_leaves_the_next_cells_reported(tmp_path):
    members = _members()
    path = tmp_path / "b.bird"
    cells = [{"id": CELL, "replayable": False, "why_not": "no"}, {"id": CELL, "replayable": True}]
    write_archive(path, {"format": FORMAT, "schema_version": SCHEMA_VERSION, "cells": cells,
                         "files": [{"path": n, "sha256": sha256(d), "size": len(d)} for n, d in sorted(members.items())]},
                  members.items())
    assert [c["replay"] for c in verify(path).cells] == [
        "cannot replay", "replays from a deterministic generator (no answers needed); results within tolerance"]


def test_a_malformed_environment_is_named_with_its_error_and_replays_within_tolerance(tmp_path):
    path = _bundle(tmp_path, _members(env={"sessions": [{"cpu": "x", "packages": []}]}))
    [problem] = _problems(path)
    assert problem == (f"runs/{CELL}/environment.json: malformed (AttributeError: 'str' object has no attribute "
                       "'get')")
    cell = verify(path).cells[0]
    assert cell["expect"] == "within tolerance" and cell["replay"].endswith("results within tolerance")


def test_a_malformed_line_leaves_the_lines_after_it_checked(tmp_path):
    no_response, edited = _line(0), _line(1)
    del no_response["response"]
    edited["response"] = {"text": "import os"}
    problems = _problems(_bundle(tmp_path, _members([no_response, edited])))
    assert [p.rsplit("): ", 1)[-1] for p in problems] == ["malformed (KeyError: 'response')",
                                                         "the answer differs from the one recorded"]


def test_a_bundle_path_with_spaces_is_cut_off_an_unreadable_members_reason(tmp_path):
    folder = tmp_path / "my bundles"
    folder.mkdir()
    members = _members()
    members[f"runs/{CELL}/result.json"] = b'{"returned_score": 0.123456789}' * 50
    path = _bundle(folder, members)
    _corrupt(path, f"runs/{CELL}/result.json")
    assert _problems(path) == [f"runs/{CELL}/result.json: cannot be read (runs/{CELL}/result.json cannot be read (Bad "
                               f"CRC-32 for file 'runs/{CELL}/result.json'))"]


def test_a_bundle_path_holding_a_colon_and_a_space_is_cut_off_each_unreadable_members_reason(tmp_path):
    folder = tmp_path / "runs: v2"  # ": " in the path, as in the reason's own "name: reason"
    folder.mkdir()
    path = _two_unreadable(folder)
    assert [p for p in verify(path).problems if "b.bird" in p] == []  # the path is cut off whole, not in part
    assert _problems(path) == TWO_UNREADABLE


def test_machine_differences_are_joined_by_a_semicolon_and_a_space():
    here = describe_environment()
    recorded = {**here, "packages": {"p0": "1"}}
    diffs = same_machine(recorded, here)
    _, why = _expectation({}, recorded, here)
    assert why == "this machine differs from the recording one: " + "; ".join(diffs[:4]) and len(diffs) > 1
