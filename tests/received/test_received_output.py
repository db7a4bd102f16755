"""Text from files someone else made is escaped for the medium a person reads it in: no control sequence from a
status file or a bundle reaches the terminal (OSC 52 would write the clipboard), and method and task names are
escaped in leaderboard.md. Positive controls: the same commands on honest files print their text."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest

from bird.analysis.report import build_leaderboard, write_leaderboard
from bird.bundle.archive import MANIFEST
from bird.escape import csv_cell, markdown, terminal

ROOT = Path(__file__).resolve().parents[2]
SMOKE_RUNS = ROOT / "tests" / "analysis" / "fixtures" / "smoke_runs"
OSC52 = "\x1b]52;c;ZWNobyBvd25lZA==\x07"  # sets the clipboard of many terminals
CSI = "\x1b[2J\x1b[H"  # clears the screen


def _clean(text: str) -> bool:
    return "\x1b" not in text and "\x07" not in text


def test_status_prints_no_control_sequence_from_a_status_file_or_a_folder_name(tmp_path):
    sweep = tmp_path / "sweep"
    (sweep / f"seed0{CSI}").mkdir(parents=True)
    (sweep / f"seed0{CSI}" / "status.json").write_text(json.dumps(
        {"state": f"failed{CSI}", "error": f"boom {OSC52} done", "iteration": f"2{OSC52}"}))
    (sweep / "seed1").mkdir()
    (sweep / "seed1" / "status.json").write_text(json.dumps({"state": "failed", "error": "MissingAPIKeyError: set X"}))
    proc = subprocess.run([sys.executable, "-m", "bird.status", str(sweep)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _clean(proc.stdout), repr(proc.stdout)
    assert "2 cells" in proc.stdout and "boom" in proc.stdout and "MissingAPIKeyError: set X" in proc.stdout


@pytest.fixture(scope="module")
def bundle(smoke_bundle: Path) -> Path:
    return smoke_bundle  # packed once per session (conftest.py); edits go to copies


def _verify(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bird.bundle", "verify", str(path)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def test_bundle_verify_prints_no_control_sequence_from_member_names_or_cell_ids(bundle, tmp_path):
    planted = tmp_path / "planted.bird"
    shutil.copy(bundle, planted)
    with zipfile.ZipFile(planted, "a") as zf:
        zf.writestr(f"runs/notes{OSC52}.txt", b"x")
    proc = _verify(planted)
    assert proc.returncode == 1 and _clean(proc.stdout + proc.stderr), repr(proc.stdout)
    assert "in the archive but not in the manifest" in proc.stdout
    manifest = json.loads(zipfile.ZipFile(bundle).read(MANIFEST))
    manifest["cells"][0]["id"] = f"eureka{OSC52}/seed0"
    renamed = tmp_path / "renamed.bird"
    with zipfile.ZipFile(bundle) as zin, zipfile.ZipFile(renamed, "w") as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, json.dumps(manifest) if info.filename == MANIFEST else zin.read(info))
    proc = _verify(renamed)
    assert proc.returncode == 2 and _clean(proc.stdout + proc.stderr), repr(proc.stderr)
    assert "is not a relative path of plain names" in proc.stderr
    honest = _verify(bundle)
    assert honest.returncode == 0 and "verified: every file matches the manifest" in honest.stdout


def test_leaderboard_markdown_escapes_method_and_task_names(tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(SMOKE_RUNS, runs)
    for run, field, name in [("eureka-s0", "method", "<img src=x onerror=alert(1)>"),
                             ("eureka-s1", "method", "<img src=x onerror=alert(1)>"),
                             ("zeroshot-s0", "task", "[click](javascript:alert(1))")]:
        path = runs / "mujoco-inverted_pendulum" / run / "result.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), field: name}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        board = build_leaderboard([runs], n_resamples=200, bt_resamples=20, curve_resamples=50, figures=False)
        md = write_leaderboard(board, tmp_path / "page").read_text()
    assert "<img" not in md and not re.search(r"(?<!\\)\]\(javascript", md), md
    assert "| &lt;img src=x onerror=alert(1)&gt; |" in md and "\\[click\\](javascript:alert(1))" in md
    assert "| zeroshot |" in md  # honest names are printed as they are
    assert "&lt;img" in (tmp_path / "page" / "leaderboard.html").read_text()


@pytest.mark.parametrize(("text", "shown"), [(f"a{OSC52}b\n{CSI}c\td\re\u202ef", "ab\nc d ef")])
def test_terminal_text_keeps_lines_and_drops_control_and_format_characters(text, shown):
    assert terminal(text) == shown


def test_markdown_and_csv_escapes():
    assert markdown("a|b <i>&[x](y) `c`\nd") == "a\\|b &lt;i&gt;&amp;\\[x\\](y) \\`c\\` d"
    assert [csv_cell(v) for v in ["=1+2", "+1", "-x", "@SUM(A1)", "\tx", "\rx", "plain", -0.5, 3, None]] == \
        ["'=1+2", "'+1", "'-x", "'@SUM(A1)", "'\tx", "'\rx", "plain", -0.5, 3, None]
