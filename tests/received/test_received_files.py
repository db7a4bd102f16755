"""Files in a directory someone else made (a received run directory, a re-run sweep) are opened safely: bird never
writes through a link planted there, refuses a run directory holding links that leave it (Hydra's `.hydra/` too)
and reads only regular files inside it (docs/security.md, "Trust boundary")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bird.files import UnsafeFileError, links_leaving, read_bytes, read_json, write_json, write_text
from bird.runlock import RunLock

ROOT = Path(__file__).resolve().parents[2]
SECRET = "the victim's file: must stay as it is\n"


@pytest.fixture()
def victim(tmp_path: Path) -> Path:
    """A file outside the run directory that a planted link points to."""
    path = tmp_path / "outside" / "victim.txt"
    path.parent.mkdir()
    path.write_text(SECRET)
    return path


def _run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    return run


def test_write_json_does_not_write_through_a_link_planted_at_its_temporary_name(tmp_path, victim):
    run = _run_dir(tmp_path)
    (run / "status.json.tmp").symlink_to(victim)
    write_json(run / "status.json", {"state": "running"})
    assert victim.read_text() == SECRET
    assert json.loads((run / "status.json").read_text()) == {"state": "running"}


def test_writing_over_a_planted_link_replaces_the_link_not_its_target(tmp_path, victim):
    run = _run_dir(tmp_path)
    (run / "epic.csv").symlink_to(victim)
    from bird.analysis.epic_bench import write_epic_csv

    write_epic_csv(run, [{"iteration": 1, "candidate": "it1-c0", "distance": 0.5, "random_median": 0.6,
                          "reason": ""}])
    assert victim.read_text() == SECRET
    assert not (run / "epic.csv").is_symlink() and (run / "epic.csv").read_text().startswith("iteration,")


def test_the_run_lock_refuses_a_planted_link_and_leaves_its_target_alone(tmp_path, victim):
    run = _run_dir(tmp_path)
    (run / "run.lock").symlink_to(victim)
    with pytest.raises(UnsafeFileError, match="run.lock"):
        RunLock(run).acquire()
    assert victim.read_text() == SECRET


def test_a_search_refuses_a_run_directory_holding_a_link_that_leaves_it(tmp_path, victim, compose_cfg):
    from bird.loop import search

    run = _run_dir(tmp_path)
    (run / "candidates").symlink_to(victim.parent, target_is_directory=True)
    with pytest.raises(UnsafeFileError, match="candidates ->"):
        search(compose_cfg(), run)
    assert sorted(p.name for p in victim.parent.iterdir()) == ["victim.txt"]
    assert not (run / "status.json").exists()


def test_links_that_stay_inside_the_run_directory_are_allowed(tmp_path, victim):
    run = _run_dir(tmp_path)
    (run / "candidates" / "it1-c0").mkdir(parents=True)
    (run / "latest").symlink_to("candidates/it1-c0", target_is_directory=True)
    (run / "gone").symlink_to(victim)
    (run / "dangling").symlink_to(tmp_path / "nowhere")
    assert links_leaving(run) == [f"dangling -> {tmp_path / 'nowhere'}", f"gone -> {victim}"]
    (run / "gone").unlink()
    (run / "dangling").unlink()
    assert links_leaving(run) == []


def test_a_rerun_into_a_directory_whose_hydra_folder_is_a_link_writes_nothing_there(tmp_path, victim):
    run = _run_dir(tmp_path)
    (run / ".hydra").symlink_to(victim.parent, target_is_directory=True)
    # env.horizon=0 is a config error: the search itself never starts, only Hydra's own writes could happen
    proc = subprocess.run([sys.executable, "-m", "bird", "budget=smoke", "run.progress=false", "env.horizon=0",
                           f"hydra.run.dir={run}"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert sorted(p.name for p in victim.parent.iterdir()) == ["victim.txt"]
    assert proc.returncode == 2 and ".hydra -> " in proc.stderr, proc.stderr[-2000:]


def test_reads_take_regular_files_inside_the_directory_only(tmp_path, victim):
    run = _run_dir(tmp_path)
    (run / "result.json").symlink_to("/dev/zero")
    (run / "status.json").symlink_to(victim)
    os.mkfifo(run / "events.jsonl")
    (run / "inside.json").write_text('{"ok": 1}')
    (run / "alias.json").symlink_to("inside.json")
    for name, why in [("result.json", "leaves"), ("status.json", "leaves"), ("events.jsonl", "not a regular file")]:
        with pytest.raises(UnsafeFileError, match=why):
            read_bytes(run / name, "record", run)
    assert read_json(run / "alias.json", "record", run) == {"ok": 1}
    write_text(run / "big.txt", "x" * 2048)
    with pytest.raises(UnsafeFileError, match="at most 1024 bytes"):
        read_bytes(run / "big.txt", "record", run, limit=1024)
