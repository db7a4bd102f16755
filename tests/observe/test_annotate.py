"""The rating study without a browser: schedules, resumable sessions, WAL, export, and safe serving over HTTP."""

from __future__ import annotations

import csv
import json
import sqlite3
import sys
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from study_helpers import serve, write_clip_run  # noqa: E402

from bird.annotate.__main__ import main as annotate_main  # noqa: E402
from bird.annotate.study import AnswerError, Study, find_clips  # noqa: E402


@pytest.fixture()
def study(tmp_path) -> Study:
    write_clip_run(tmp_path / "runs", "metaworld", "push", [1.0, 0.0, 1.0, 0.0, 1.0])
    write_clip_run(tmp_path / "runs", "mujoco", "hopper", [0.3, 0.1, 0.5])
    s = Study(tmp_path / "study.sqlite")
    assert s.add_clips(find_clips([tmp_path / "runs"])) == 8
    return s


def _schedule(s: Study, rater) -> list[tuple[int, int]]:
    con = sqlite3.connect(s.path)
    rows = con.execute("SELECT clip_id, is_repeat FROM schedule WHERE rater_id = ? ORDER BY position",
                       (rater.id,)).fetchall()
    con.close()
    return rows


def test_each_rater_sees_every_clip_in_a_shuffled_order_with_unannounced_repeats(study):
    a, b = study.add_rater("A", 0.25, seed=1), study.add_rater("B", 0.25, seed=1)
    sa, sb = _schedule(study, a), _schedule(study, b)
    for sched in (sa, sb):
        firsts = [c for c, rep in sched if not rep]
        assert sorted(firsts) == list(range(1, 9))  # every clip once
        repeats = [c for c, rep in sched if rep]
        assert len(repeats) == 2  # round(0.25 * 8)
        for c in repeats:  # a repeat comes later, with at least 3 other clips in between
            assert [x for x, _ in sched].index(c) + 3 < len(sched) - [x for x, _ in sched][::-1].index(c) - 1
    assert [c for c, _ in sa] != [c for c, _ in sb]  # raters get different orders
    assert study.add_rater("A").token == a.token  # idempotent
    assert Study(study.path).add_rater("C", 0.25, seed=1) and _schedule(study, study.add_rater("A", seed=1)) == sa


def test_answers_are_validated_and_a_half_finished_session_resumes(study):
    rater = study.add_rater("A", 0.25)
    first = study.progress(rater)["next"]
    with pytest.raises(AnswerError, match="outside"):
        study.answer(rater, {"position": first["position"], "completion": 6, "naturalness": 3})
    with pytest.raises(AnswerError) as conflict:
        study.answer(rater, {"position": first["position"] + 1, "completion": 3, "naturalness": 3})
    assert conflict.value.status == 409
    for _ in range(3):
        item = study.progress(rater)["next"]
        study.answer(rater, {"position": item["position"], "completion": 4,
                             "naturalness": 2 if item["ask_naturalness"] else None, "elapsed_ms": 1500})
    reopened = Study(study.path)  # e.g. after a server restart
    prog = reopened.progress(reopened.rater_by_token(rater.token))
    assert prog["answered"] == 3 and prog["total"] == 10 and prog["next"]["position"] == 3
    con = sqlite3.connect(study.path)
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()


def test_naturalness_is_asked_outside_the_completion_only_domains(study):
    rater = study.add_rater("A", 0.0)
    seen = Counter()
    while (item := study.progress(rater)["next"]) is not None:
        seen[(item["suite"], item["ask_naturalness"])] += 1
        payload = {"position": item["position"], "completion": 3, "naturalness": 5}
        if not item["ask_naturalness"]:
            with pytest.raises(AnswerError, match="not asked"):
                study.answer(rater, payload)
            payload["naturalness"] = None
        study.answer(rater, payload)
    assert seen == {("metaworld", True): 5, ("mujoco", False): 3}


def test_export_writes_one_tidy_row_per_answer(study, tmp_path):
    rater = study.add_rater("A", 0.0)
    item = study.progress(rater)["next"]
    study.answer(rater, {"position": item["position"], "completion": 2,
                         "naturalness": 4 if item["ask_naturalness"] else None})
    out = tmp_path / "ratings.csv"
    assert annotate_main(["export", "--db", str(study.path), "--out", str(out)]) == 0
    [row] = list(csv.DictReader(out.open()))
    assert row["rater"] == "A" and row["completion"] == "2" and row["scale_points"] == "5"
    assert row["suite"] in ("metaworld", "mujoco") and float(row["benchmark_score"]) in (0.0, 0.1, 0.3, 0.5, 1.0)
    assert row["clip_path"].endswith(".mp4") and row["is_repeat"] == "0"


def _request(url: str, data: bytes | None = None, method: str | None = None) -> tuple[int, dict, bytes]:
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": "application/json"} if data is not None else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def test_serving_is_safe_traversal_missing_token_and_malformed_answers(study, tmp_path):
    from bird.annotate.app import make_app

    secret = tmp_path / "secret.txt"
    secret.write_text("do not serve me")
    token = study.add_rater("A", 0.0).token
    with serve(make_app(study)) as base:
        page = f"{base}/r/{token}/"
        status, headers, body = _request(page)
        assert status == 200 and b"rate.js" in body
        assert "script-src 'self'" in headers["content-security-policy"] and headers["referrer-policy"] == "no-referrer"
        state = json.loads(_request(page + "api/state")[2])
        assert state["total"] == 8 and state["item"]["clip_url"] == "clip/0"
        status, headers, body = _request(page + "clip/0")
        assert status == 200 and headers["content-type"] == "video/mp4" and body[4:8] == b"ftyp"
        for bad in ("clip/1", "clip/../../secret.txt", "clip/..%2F..%2Fsecret.txt", "clip/%2e%2e%2fstudy.sqlite",
                    "clip/-1", "clip/99999999999", "clip/0x1"):
            status, _, body = _request(page + bad)
            assert status == 404 and b"do not serve me" not in body, bad  # clip 1 is not the current one yet
        for bad in ("/static/..%2F..%2Fannotate%2Fstudy.py", "/static/rate.html%00.js", "/static/study.py"):
            assert _request(base + bad)[0] == 404, bad
        for no_token in ("/", "/r//api/state", "/r/api/state", "/r/short/api/state", f"/r/{'x' * 24}/api/state",
                         f"/r/{token}x/clip/0"):
            status, _, body = _request(base + no_token)
            assert status == 404 and b"ftyp" not in body, no_token
        post = page + "api/answer"
        position = state["item"]["position"]
        malformed = [b"not json", b"[1, 2]", b'{"position": 0}', b'{"position": 0, "completion": "3"}',
                     b'{"position": 0, "completion": true}', b'{"position": 0, "completion": 0}',
                     b'{"position": 0, "completion": 3, "naturalness": 3, "admin": 1}', b"{" + b" " * 5000 + b"}"]
        for bad in malformed:
            assert _request(post, bad)[0] in (413, 422), bad
        assert _request(f"{base}/r/{'y' * 24}/api/answer", b'{"position": 0, "completion": 3}')[0] == 404
        assert _request(post, json.dumps({"position": position + 1, "completion": 3}).encode())[0] == 409
        natural = 2 if state["item"]["ask_naturalness"] else None
        status, _, body = _request(post, json.dumps({"position": position, "completion": 3,
                                                     "naturalness": natural}).encode())
        assert status == 200 and json.loads(body)["answered"] == 1
        assert _request(page + "clip/1")[0] == 200  # now the current clip
    rows = Study(study.path).rows()
    assert len(rows) == 1 and rows[0]["completion"] == 3  # nothing malformed got in


def test_serve_command_sets_up_the_study_and_prints_private_links(tmp_path, capsys):
    write_clip_run(tmp_path / "runs", "metaworld", "reach", [1.0, 0.0])
    db = tmp_path / "s.sqlite"
    assert annotate_main(["serve", str(tmp_path / "runs"), "--db", str(db), "--no-serve"]) == 0
    out = capsys.readouterr().out
    tokens = [line.split("/r/")[1].rstrip("/") for line in out.splitlines() if "/r/" in line]
    assert len(tokens) == 2 and "A: http://localhost:8765/r/" in out  # raters A and B by default
    assert {r.token for r in Study(db).raters()} == set(tokens)
    assert annotate_main(["serve", str(tmp_path / "nowhere"), "--db", str(db), "--no-serve"]) == 2


def test_several_raters_answering_at_once_lose_nothing(study):
    import threading

    raters = [study.add_rater(name, 0.25) for name in ("A", "B", "C")]
    errors: list[Exception] = []

    def rate_all(rater) -> None:
        s = Study(study.path)  # each thread its own handle, as the server's request threads are
        try:
            while (item := s.progress(rater)["next"]) is not None:
                s.answer(rater, {"position": item["position"], "completion": 1 + item["position"] % 5,
                                 "naturalness": 3 if item["ask_naturalness"] else None})
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=rate_all, args=(r,)) for r in raters]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    rows = study.rows()
    assert len(rows) == 3 * 10 and {r["rater"] for r in rows} == {"A", "B", "C"}
    assert all(r["completion"] == 1 + r["position"] % 5 for r in rows)
