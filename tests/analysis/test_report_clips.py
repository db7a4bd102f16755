"""The leaderboard's clips: one clip per method × task, copied next to the report, listed in the Markdown (byte for
byte on a hand-made table) and playing in its row of the page's per-task table; build_leaderboard picking the clips
from the runs' result.json, and never a file outside the run directory."""

from __future__ import annotations

import json
import warnings

import pandas as pd
from synthetic_runs import write_run

from bird.analysis import build_leaderboard, read_runs, write_leaderboard
from bird.analysis.report import Leaderboard


def _clip(tmp_path, name: str) -> str:
    path = tmp_path / "videos" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(f"video {name}".encode())
    return str(path)


def test_clips_are_copied_and_laid_out_per_benchmark_task_and_method(tmp_path):
    clips = pd.DataFrame([
        {"benchmark": "mujoco", "task": "hopper", "method": "eureka", "seed": 2, "returned_score": 0.25, "n_runs": 3,
         "clip_score": 0.125, "description": 'hop "high" & far', "path": _clip(tmp_path, "a.mp4")},
        {"benchmark": "mujoco", "task": "hopper", "method": "card", "seed": 0, "returned_score": float("nan"),
         "n_runs": 1, "clip_score": None, "description": "", "path": _clip(tmp_path, "b.mp4")},
        {"benchmark": "mujoco", "task": "ant/v5", "method": "eureka", "seed": 1, "returned_score": 0.5, "n_runs": 2,
         "clip_score": float("nan"), "description": "walk", "path": _clip(tmp_path, "c.mp4")},
        {"benchmark": "metaworld", "task": "push", "method": "grace<1>", "seed": 4, "returned_score": 1.0,
         "n_runs": 5, "clip_score": 1.0, "description": "push", "path": _clip(tmp_path, "d.mp4")},
    ])
    out = tmp_path / "out"
    write_leaderboard(Leaderboard({}, {}, [], [], clips), out)
    copied = sorted(p.name for p in (out / "clips").iterdir())
    assert copied == ["metaworld-push-grace<1>.mp4", "mujoco-ant_v5-eureka.mp4", "mujoco-hopper-card.mp4",
                      "mujoco-hopper-eureka.mp4"]
    assert (out / "clips" / "mujoco-hopper-card.mp4").read_bytes() == b"video b.mp4"
    md = (out / "leaderboard.md").read_text()
    intro = ("One clip per method × task: the first evaluation episode of the returned policy (final retrain) of the "
             "run with the median returned score.")
    assert md.endswith(
        "## Figures\n\n## Clips\n\n" + intro + "\n\n"
        "- metaworld/push, grace&lt;1&gt;: [clips/metaworld-push-grace&lt;1&gt;.mp4](clips/metaworld-push-grace%3C1%3E.mp4) — "
        "returned score 1.000 (seed 4, median of 5 runs); this episode 1.000\n"
        "- mujoco/ant/v5, eureka: [clips/mujoco-ant_v5-eureka.mp4](clips/mujoco-ant_v5-eureka.mp4) — "
        "returned score 0.500 (seed 1, median of 2 runs); this episode n/a\n"
        "- mujoco/hopper, card: [clips/mujoco-hopper-card.mp4](clips/mujoco-hopper-card.mp4) — "
        "returned score n/a (seed 0, median of 1 runs); this episode n/a\n"
        "- mujoco/hopper, eureka: [clips/mujoco-hopper-eureka.mp4](clips/mujoco-hopper-eureka.mp4) — "
        "returned score 0.250 (seed 2, median of 3 runs); this episode 0.125\n")

    def cell(name: str, title: str, caption: str) -> str:
        return (f'<td class="clip"><video src="clips/{name}" title="{title}" controls muted loop playsinline '
                f'preload="metadata"></video><div class="cap">{caption}</div></td>')

    html = (out / "leaderboard.html").read_text()
    assert "<video" not in html  # no per-task table, no clips on the page
    keys = [(b, t, m) for b, t, m in zip(clips["benchmark"], clips["task"], clips["method"], strict=True)]
    tasks = pd.DataFrame([{"benchmark": b, "task": t, "method": m, "n_runs": 1, "n_seeds": 1, "mean": 0.5, "low": 0.5,
                           "high": 0.5, "degenerate": True, "min": 0.5, "max": 0.5}
                          for b, t, m in [*keys, ("mujoco", "ant/v5", "card")]])
    write_leaderboard(Leaderboard({}, {}, [], [], clips, tasks), out)
    html = (out / "leaderboard.html").read_text()

    def row(task: str, method: str) -> str:
        start = html.index(f"<tr><td>{task}</td><td>{method}</td>")
        return html[start:html.index("</tr>", start)]

    assert cell("metaworld-push-grace&lt;1&gt;.mp4", "push",
                "seed 4, returned score 1.000 (the median of 5 runs); this episode 1.000") in row("push", "grace&lt;1&gt;")
    assert cell("mujoco-ant_v5-eureka.mp4", "walk", "seed 1, returned score 0.500 (the median of 2 runs); this episode n/a") \
        in row("ant/v5", "eureka")
    assert '<td class="clip">–</td>' in row("ant/v5", "card")
    assert cell("mujoco-hopper-card.mp4", "", "seed 0, returned score n/a (the median of 1 run); this episode n/a") in row("hopper", "card")
    assert cell("mujoco-hopper-eureka.mp4", "hop &quot;high&quot; &amp; far",
                "seed 2, returned score 0.250 (the median of 3 runs); this episode 0.125") in row("hopper", "eureka")
    assert html.count("<video") == 4


def test_a_report_written_again_into_the_same_folder_replaces_its_clips(tmp_path):
    def clips(text: str) -> pd.DataFrame:
        return pd.DataFrame([{"benchmark": "mujoco", "task": "hopper", "method": "eureka", "seed": 0,
                              "returned_score": 0.5, "n_runs": 1, "clip_score": 0.5, "description": "",
                              "path": _clip(tmp_path, text)}])

    out = tmp_path / "out"
    write_leaderboard(Leaderboard({}, {}, [], [], clips("first.mp4")), out)
    write_leaderboard(Leaderboard({}, {}, [], [], clips("second.mp4")), out)  # clips/ exists now
    assert (out / "clips" / "mujoco-hopper-eureka.mp4").read_bytes() == b"video second.mp4"


def test_no_clips_no_section_and_no_folder(tmp_path):
    write_leaderboard(Leaderboard({}, {}, [], []), tmp_path)
    assert not (tmp_path / "clips").exists()
    assert "Clips" not in (tmp_path / "leaderboard.md").read_text() and "<video" not in (tmp_path / "leaderboard.html").read_text()


def test_build_leaderboard_picks_the_median_runs_clip_with_and_without_figures(tmp_path):
    root = tmp_path / "runs"
    for seed, score in enumerate((0.9, 0.1, 0.5)):
        run = write_run(root, "eureka", "mujoco", "hopper", seed)
        (run / "final").mkdir()
        (run / "final" / "episode0.mp4").write_bytes(b"mp4")
        result = json.loads((run / "result.json").read_text())
        result.update(returned_score=score, videos={"clips": [
            {"video": "final/episode0.mp4", "score": score / 2, "description": f"seed {seed}"}]})
        (run / "result.json").write_text(json.dumps(result))
    coll = read_runs(root, warn=False)
    for figures in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            lb = build_leaderboard(coll, n_resamples=20, bt_resamples=5, curve_resamples=20, figures=figures)
        [row] = lb.clips.to_dict("records")
        assert (row["seed"], row["returned_score"], row["n_runs"], row["clip_score"], row["description"]) == \
            (2, 0.5, 3, 0.25, "seed 2")
        assert row["path"].endswith("seed2/" + row["path"].split("seed2/")[1]) and row["path"].endswith("episode0.mp4")


def test_a_leaderboard_without_any_clip_says_why_in_its_notes_and_on_the_page(tmp_path):
    """As from a bundle packed without --with-media: result.json lists a clip whose file is not there; another run
    recorded none."""
    from synthetic_runs import add_clip

    listed = add_clip(write_run(tmp_path / "runs", "eureka", "mujoco", "hopper", 0), _clip_file(tmp_path), 0.5)
    (listed / "final" / "episode0.mp4").unlink()
    off = write_run(tmp_path / "runs", "card", "mujoco", "hopper", 0)
    result = json.loads((off / "result.json").read_text())
    (off / "result.json").write_text(json.dumps({**result, "videos": {"record": "none", "clips": []}}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        lb = build_leaderboard(read_runs(tmp_path / "runs"), n_resamples=50, bt_resamples=10, figures=False)
    why = ("clips: none to show: 1 clip(s) the runs list are not in their directories (a bundle holds clips only "
           "when packed with --with-media); 1 run(s) recorded none (video.record=none)")
    assert lb.clips.empty and why in lb.notes
    write_leaderboard(lb, tmp_path / "out")
    page = (tmp_path / "out" / "leaderboard.html").read_text()
    assert '<p class="remark">Clips: none to show: 1 clip(s) the runs list are not in their directories' in page


def _clip_file(tmp_path):
    path = tmp_path / "pattern.mp4"
    path.write_bytes(b"not really a video")
    return path
