"""The rating page in a real browser: Playwright drives Debian's chromium through a study over two runs' clips."""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from study_helpers import serve  # noqa: E402

from bird.analysis.__main__ import main as analysis_main  # noqa: E402
from bird.annotate.app import make_app  # noqa: E402
from bird.annotate.study import Study, find_clips  # noqa: E402

pytestmark = pytest.mark.slow


def _rate(page, rule, by_keyboard: bool, shots: Path | None = None, reload_after: int | None = None) -> int:
    """Rate every clip on the page: rule(task text) -> (completion, naturalness). Returns clips rated.

    With `shots`, a screenshot of the first page of each kind (two questions / completion only), answered."""
    n, taken = 0, set()
    while page.locator("#done").is_hidden():
        page.wait_for_function("document.getElementById('video').videoWidth > 0", timeout=30_000)
        task = page.locator("#task").inner_text()
        completion, naturalness = rule(task)
        natural_asked = page.locator("#q-naturalness").is_visible()
        before = page.locator("#count").inner_text()
        if by_keyboard:
            page.keyboard.press(str(completion))
            if natural_asked:
                page.keyboard.press(str(naturalness))
            kind = "rating_page" if natural_asked else "rating_page_completion_only"
            if shots is not None and kind not in taken:
                page.screenshot(path=str(shots / f"{kind}.png"), full_page=True)
                taken.add(kind)
            page.keyboard.press("Enter")
        else:
            page.locator(f"#completion-scale button[data-value='{completion}']").click()
            if natural_asked:
                page.locator(f"#naturalness-scale button[data-value='{naturalness}']").click()
            page.locator("#submit").click()
        page.wait_for_function(f"document.getElementById('count').innerText !== {before!r}")
        n += 1
        if reload_after == n:  # a half-finished session resumes where it stopped
            page.reload()
            page.wait_for_function("document.getElementById('count').innerText.startsWith('clip ')")
            assert page.locator("#count").inner_text().startswith(f"clip {n + 1} of")
    return n


def test_two_raters_rate_every_clip_in_chromium(chromium, hopper_run, push_run, tmp_path, capsys):
    study = Study(tmp_path / "study.sqlite")
    clips = find_clips([hopper_run, push_run])
    assert study.add_clips(clips) == 3  # hopper: 2 filmed episodes, push: 1
    raters = [study.add_rater("A", repeat_fraction=0.5, seed=0), study.add_rater("B", repeat_fraction=0.5, seed=0)]
    shots = Path(os.environ.get("BIRD_SCREENSHOT_DIR", tmp_path))
    with serve(make_app(study)) as base:
        # bypass_csp: Playwright evaluates its wait conditions as strings, which the page's CSP forbids
        page = chromium.new_page(viewport={"width": 1280, "height": 800}, bypass_csp=True)
        page.goto(f"{base}/r/{raters[0].token}")  # no trailing slash: redirected
        assert _rate(page, lambda t: (4, 2) if "hopper" in t else (2, 3), by_keyboard=True, shots=shots) == 4
        assert "thank you" in page.locator("#done").inner_text()
        page.goto(f"{base}/r/{raters[1].token}/")
        assert _rate(page, lambda t: (5, 1) if "hopper" in t else (2, 4), by_keyboard=False, reload_after=2) == 4
        assert page.locator("#count").inner_text() == "4 of 4"
        page.goto(f"{base}/r/{'z' * 24}/")
        assert "Unknown or missing rater token" in page.content()
        page.close()
    assert (shots / "rating_page.png").stat().st_size > 10_000
    con = sqlite3.connect(study.path)
    rows = con.execute("SELECT r.name, c.suite, a.is_repeat, a.completion, a.naturalness FROM ratings a "
                       "JOIN raters r ON r.id = a.rater_id JOIN clips c ON c.id = a.clip_id").fetchall()
    con.close()
    assert len(rows) == 8 and sum(r[2] for r in rows) == 2  # 3 clips + 1 unannounced repeat, per rater
    expected = {("A", "mujoco"): (4, None), ("A", "metaworld"): (2, 3), ("B", "mujoco"): (5, None),
                ("B", "metaworld"): (2, 4)}
    assert all((r[3], r[4]) == expected[(r[0], r[1])] for r in rows)
    assert analysis_main(["agreement", str(study.path), "--n-resamples", "200"]) == 0
    out = capsys.readouterr().out
    assert "| within rater | completion | 2 | 100% [100%, 100%] |" in out  # each rater repeated their answer
    assert "| between raters | completion | 3 | 33% [" in out  # raters agree on the push clip only
