"""tests/session_share.py: what xdist workers make once is made once, whichever process asks first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import session_share

HERE = Path(__file__).resolve().parent
ASK = """
import sys, time
sys.path.insert(0, {here!r})
import session_share

def make(folder):
    with open({log!r}, "a") as log:
        log.write("made\\n")
    time.sleep(1.0)  # the other process asks meanwhile, and waits
    (folder / "data.txt").write_text("inside")
    return {{"value": [1, 2], "folder": str(folder)}}

print(session_share.once("test-once", make)["value"])
"""


def test_two_processes_asking_at_once_get_one_making_and_the_same_value(tmp_path, monkeypatch):
    monkeypatch.setenv(session_share.ENV, str(tmp_path))
    log = tmp_path / "log.txt"
    code = ASK.format(here=str(HERE), log=str(log))
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=60)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0] and outs == ["[1, 2]\n", "[1, 2]\n"]
    assert log.read_text() == "made\n"
    saved = json.loads((tmp_path / "once" / "test-once.json").read_text())
    assert Path(saved["folder"], "data.txt").read_text() == "inside"


def test_a_make_that_raised_is_made_again_by_the_next_caller(tmp_path, monkeypatch):
    monkeypatch.setenv(session_share.ENV, str(tmp_path))

    def broken(folder):
        (folder / "half").write_text("x")
        raise RuntimeError("interrupted")

    try:
        session_share.once("again", broken)
    except RuntimeError:
        pass
    assert session_share.once("again", lambda folder: sorted(p.name for p in folder.iterdir())) == []
