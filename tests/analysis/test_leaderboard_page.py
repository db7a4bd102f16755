"""leaderboard.html in a real browser: Playwright drives Debian's chromium over the page opened from file:// (no
server). The tables sort (missing values last), every clip loads and plays, every figure and copied run file is
there, and the page logs no error. SYNTHETIC runs (synthetic_runs.py) with test-pattern clips keep it cheap."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import pytest
from synthetic_runs import add_clip, pattern_clip, write_sweep

from bird.analysis import build_leaderboard, read_runs, write_leaderboard

METHODS = {"eureka": 0.6, "card": 0.0, "grace": -0.4}  # method -> effect on its scores
TASKS = [("mujoco", "hopper"), ("mujoco", "ant"), ("metaworld", "push"), ("metaworld", "reach")]
NO_SCORE = ("card", "metaworld", "reach")  # every seed returned no reward: its cells are "n/a" and sort last


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    root = tmp_path_factory.mktemp("page")
    clips = {m: pattern_clip(root / "patterns" / f"{m}.mp4", f"SYNTHETIC test pattern: {m}") for m in METHODS}
    for run in write_sweep(root / "runs", METHODS, TASKS, seeds=[0, 1, 2], epic=True):
        result = json.loads((run / "result.json").read_text())
        if (result["method"], result["suite"], result["task"]) == NO_SCORE:
            result["returned_score"] = None
            (run / "result.json").write_text(json.dumps(result))
        add_clip(run, clips[result["method"]], score=result["returned_score"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        lb = build_leaderboard(read_runs(root / "runs"), n_resamples=200, bt_resamples=20, curve_resamples=50)
    out = root / "out"
    write_leaderboard(lb, out, bundle="/elsewhere/comparison.bird")
    return out, lb


def _column(page, table: str, index: int) -> list[str]:
    return page.locator(f"{table} tbody tr td:nth-child({index})").all_inner_texts()


def _sort(page, table: str, heading: str) -> None:
    page.locator(f"{table} thead th", has_text=heading).first.click()


def _lead(text: str) -> float:
    return float(text.split()[0]) if text[:1].isdigit() or text[:1] == "-" else float("inf")  # "n/a..." last


def test_the_page_sorts_plays_its_clips_and_links_every_run_file_in_chromium(chromium, board):
    out, lb = board
    errors: list[str] = []
    page = chromium.new_page(viewport={"width": 1280, "height": 1500})
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("requestfailed", lambda req: errors.append(f"request failed: {req.url}"))
    page.goto((out / "leaderboard.html").as_uri())

    # the overview: rows start by method name; the mean sorts them, missing (lacks tasks) last either way
    overview = "#overview-metaworld + table"
    first = _column(page, overview, 1)
    assert first == sorted(METHODS)
    table = lb.tables["metaworld"].set_index("method")["mean [95% BCa]"]
    ascending = sorted(first, key=lambda m: _lead(table[m]))
    assert ascending != first and table["card"].startswith("n/a")  # the sort has something to do
    _sort(page, overview, "mean [95% BCa]")
    assert _column(page, overview, 1) == ascending
    _sort(page, overview, "mean [95% BCa]")
    assert _column(page, overview, 1) == [*reversed(ascending[:-1]), "card"]
    _sort(page, overview, "method")
    assert _column(page, overview, 1) == sorted(METHODS)

    # per task: by mean over all rows, then by task: stable, so the methods are ranked within each task
    tasks = "#tasks-metaworld + table"
    rows = lambda: list(zip(_column(page, tasks, 1), _column(page, tasks, 2), strict=True))  # noqa: E731
    start = rows()
    means = {(t.task, t.method): t.mean for t in lb.tasks[lb.tasks["benchmark"] == "metaworld"].itertuples()}
    by_mean = sorted(start, key=lambda r: (means[r] != means[r], means[r] if means[r] == means[r] else 0))
    _sort(page, tasks, "mean [95% BCa]")
    assert rows() == by_mean != start and by_mean[-1] == ("reach", "card")
    _sort(page, tasks, "task")
    within = [r for t in ("push", "reach") for r in by_mean if r[0] == t]
    assert rows() == within and within != start

    # every clip loads and plays; every figure is drawn
    page.wait_for_function("[...document.querySelectorAll('video')].every(v => v.readyState >= 1)", timeout=30_000)
    videos = page.eval_on_selector_all("video", "vs => vs.map(v => [v.error && v.error.code, v.videoWidth, v.duration])")
    assert len(videos) == len(METHODS) * len(TASKS)  # a clip per method × task (with a returned score or not)
    assert all(err is None and width == 240 and duration > 1.5 for err, width, duration in videos)
    page.wait_for_function("[...document.querySelectorAll('video')].some(v => v.currentTime > 0)", timeout=30_000)
    images = page.eval_on_selector_all("figure img", "is => is.map(i => i.complete && i.naturalWidth)")
    assert len(images) == 7 and all(images)

    # each run's files are copied next to the page and linked from its rows
    hrefs = page.eval_on_selector_all("td.files a", "as => as.map(a => a.getAttribute('href'))")
    assert len(hrefs) == 3 * 3 * len(METHODS) * len(TASKS) * 3  # benchmark, pooled and task rows; 3 files; 3 seeds
    assert all((out / h).is_file() for h in hrefs)
    assert "python -m bird.bundle replay comparison.bird --out DIR" in page.locator("#rerun").inner_text()
    shots = Path(os.environ.get("BIRD_SCREENSHOT_DIR", out))
    page.reload()  # as a reader first sees it, with the clips in view playing
    page.wait_for_function("[...document.querySelectorAll('video')].some(v => v.currentTime > 0.5)", timeout=30_000)
    page.screenshot(path=str(shots / "leaderboard.png"))
    page.close()
    assert errors == []
