"""The rating study reads clips from run directories someone else may have made: a clip that is a link is never
registered or served, the app caps a request body while reading it and refuses a state-changing request from
another origin, and the export neutralises spreadsheet formulas. The positive control is a whole study: clips
served, answers stored, the export read back."""

from __future__ import annotations

import csv
import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "observe"))
from study_helpers import write_clip_run  # noqa: E402

from bird.annotate.app import make_app  # noqa: E402
from bird.annotate.study import Study, find_clips  # noqa: E402
from bird.learners.video import read_clips  # noqa: E402

SECRET = b"a host file the rater must never see"


@pytest.fixture()
def runs(tmp_path: Path) -> Path:
    write_clip_run(tmp_path / "runs", "mujoco", "hopper", [0.3, 0.1])
    return tmp_path / "runs"


def _client(study: Study):
    from starlette.testclient import TestClient

    return TestClient(make_app(study))


def test_a_clip_that_is_a_link_is_neither_registered_nor_served(runs, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_bytes(SECRET)
    clip = runs / "eureka-mujoco-hopper" / "final" / "seed1000" / "episode0.mp4"
    clip.unlink()
    clip.symlink_to(secret)
    assert [rec["path"] for rec in read_clips(clip.parent)] == [None, str(clip.parent.resolve() / "episode1.mp4")]
    assert [Path(c["path"]).name for c in find_clips([runs])] == ["episode1.mp4"]
    # a database made before the check stored the link's target: it is not served either (it leaves the run)
    for path in (secret,):
        study = Study(tmp_path / f"{path.name}.sqlite")
        study.add_clips([{"path": str(path), "run_dir": str(runs / "eureka-mujoco-hopper"), "suite": "mujoco",
                          "task": "hopper", "description": "x"}])
        rater = study.add_rater("A", 0.0)
        response = _client(study).get(f"/r/{rater.token}/clip/0")
        assert response.status_code == 404 and SECRET not in response.content


def test_a_whole_study_serves_its_clips_stores_answers_and_exports_them(runs, tmp_path):
    study = Study(tmp_path / "study.sqlite")
    assert study.add_clips(find_clips([runs])) == 2
    rater = study.add_rater("A", 0.0)
    client = _client(study)
    for _ in range(2):
        item = client.get(f"/r/{rater.token}/api/state").json()["item"]
        clip = client.get(f"/r/{rater.token}/{item['clip_url']}")
        assert clip.status_code == 200 and clip.content[4:8] == b"ftyp"  # an MP4
        answer = client.post(f"/r/{rater.token}/api/answer", json={"position": item["position"], "completion": 4},
                             headers={"Origin": "http://testserver"})
        assert answer.status_code == 200, answer.text
    assert client.get(f"/r/{rater.token}/api/state").json()["done"]
    assert study.export_csv(tmp_path / "out.csv") == 2
    rows = list(csv.DictReader((tmp_path / "out.csv").read_text().splitlines()))
    assert [(r["rater"], r["completion"], r["description"]) for r in rows] == [("A", "4", "Do the hopper task.")] * 2
    con = sqlite3.connect(study.path)
    assert con.execute("SELECT COUNT(*) FROM ratings").fetchone()[0] == 2
    con.close()


def _post(app, token: str, chunks: int, headers: list[tuple[bytes, bytes]]) -> tuple[int, int]:
    """POST an answer of `chunks` KiB, streamed, straight to the ASGI app; returns (status, chunks it read)."""
    import asyncio

    read = 0

    async def receive() -> dict:
        nonlocal read
        read += 1
        return {"type": "http.request", "body": b"x" * 1024, "more_body": read < chunks}

    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": f"/r/{token}/api/answer", "raw_path": b"", "query_string": b"",
             "headers": [(b"host", b"testserver"), *headers], "scheme": "http", "server": ("testserver", 80),
             "client": ("127.0.0.1", 1), "root_path": "", "http_version": "1.1"}
    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], read


def test_the_answer_body_is_capped_while_it_is_read(runs, tmp_path):
    study = Study(tmp_path / "study.sqlite")
    study.add_clips(find_clips([runs]))
    rater = study.add_rater("A", 0.0)
    app = make_app(study)
    assert _post(app, rater.token, 1000, []) == (413, 5)  # stops after the 5th KiB (the cap is 4096 bytes)
    assert _post(app, rater.token, 1000, [(b"content-length", b"1024000")]) == (413, 0)  # refused before reading


def test_a_state_changing_request_from_another_origin_is_refused(runs, tmp_path):
    study = Study(tmp_path / "study.sqlite")
    study.add_clips(find_clips([runs]))
    rater = study.add_rater("A", 0.0)
    client = _client(study)
    answer = {"position": 0, "completion": 3}
    for headers in ({"Origin": "http://evil.example"}, {"Origin": "null"}, {"Sec-Fetch-Site": "cross-site"}):
        response = client.post(f"/r/{rater.token}/api/answer", json=answer, headers=headers)
        assert response.status_code == 403, headers
    assert study.progress(rater)["answered"] == 0
    assert client.post(f"/r/{rater.token}/api/answer", json=answer).status_code == 200  # curl: no Origin


def test_the_export_neutralises_spreadsheet_formulas(runs, tmp_path):
    study = Study(tmp_path / "study.sqlite")
    clips = find_clips([runs])
    clips[0]["description"] = '=HYPERLINK("http://evil.example","open")'
    clips[0]["method"] = "@SUM(A1)"
    study.add_clips(clips)
    rater = study.add_rater("A", 0.0)
    for _ in range(2):
        study.answer(rater, {"position": study.progress(rater)["next"]["position"], "completion": 2})
    study.export_csv(tmp_path / "out.csv")
    cells = [c for row in csv.reader((tmp_path / "out.csv").read_text().splitlines()) for c in row]
    assert not any(c.startswith(("=", "+", "@", "\t", "\r")) for c in cells)
    assert "'=HYPERLINK(\"http://evil.example\",\"open\")" in cells and "'@SUM(A1)" in cells
