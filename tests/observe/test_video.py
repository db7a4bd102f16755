"""Videos: one playable MP4 per final seed of the returned policy, in every suite; candidate clips every k-th
iteration; no GL recorded and survived; the leaderboard embeds one clip per method × task."""

from __future__ import annotations

import json
import math
import warnings

import imageio.v3 as iio
import numpy as np
import pytest

from bird.analysis.__main__ import main as analysis_main
from bird.envs.frames import RenderingUnavailable, gl_backend
from bird.learners.job import video_spec

pytestmark = pytest.mark.slow


def _clip_records(run):
    return [json.loads(p.read_text()) for p in sorted((run / "final").glob("seed*/episode*.json"))]


def _decode(path):
    frames = iio.imread(path, extension=".mp4")
    assert frames.ndim == 4 and frames.shape[-1] == 3 and frames.dtype == np.uint8
    return frames


@pytest.mark.parametrize("fixture", ["hopper_run", "push_run"])
def test_smoke_search_leaves_a_playable_mp4_per_final_seed(request, fixture):
    run = request.getfixturevalue(fixture)
    result = json.loads((run / "result.json").read_text())
    final = json.loads((run / "final" / "final.json").read_text())
    assert result["videos"]["problems"] == [] and len(result["videos"]["clips"]) >= len(final["seeds"])
    for seed, videos in zip(final["seeds"], final["videos"], strict=True):
        assert videos and all(v.startswith(f"final/seed{seed}/episode") for v in videos)
    for rec in _clip_records(run):
        assert rec["status"] == "recorded" and rec["description"] == result_task(run)["description"]
        frames = _decode(run / "final" / f"seed{rec['training_seed']}" / rec["video"])
        assert frames.shape[1:3] == (240, 320) and len(frames) == rec["frames"]
        assert frames.std() > 5 and np.abs(frames[0].astype(int) - frames[-1]).mean() > 0.1  # a scene that moves
        assert rec["frames"] == math.ceil(rec["steps"] / rec["frame_skip"]) + 1  # reset, every k-th step, the last
        assert math.isfinite(rec["score"]) and rec["method"] == "eureka" and rec["candidate_id"] == final["candidate_id"]


def result_task(run):
    return json.loads((run / "task.json").read_text())


def test_filmed_episodes_are_the_evaluation_episodes(hopper_run):
    """Episode k is reset with evaluation seed k: the mean of the filmed scores is the final evaluation's score."""
    recs = _clip_records(hopper_run)
    assert [r["episode"] for r in recs] == [0, 1]
    assert np.mean([r["score"] for r in recs]) == pytest.approx(recs[0]["evaluation_score"], abs=1e-9)


def test_all_candidates_are_filmed_every_kth_iteration(hopper_run):
    it1 = sorted(hopper_run.glob("candidates/it1-*/episode0.mp4"))
    it2 = sorted(hopper_run.glob("candidates/it2-*/episode0.mp4"))
    assert it1 == [] and len(it2) == 2  # video.every=2: iteration 2 only
    assert len(_decode(it2[0])) > 1


def test_without_gl_the_run_records_why_and_completes(nogl_run):
    result = json.loads((nogl_run / "result.json").read_text())
    assert json.loads((nogl_run / "status.json").read_text())["state"] == "completed"
    assert math.isfinite(result["returned_score"]) and result["videos"]["clips"] == []
    assert any("switched off" in p for p in result["videos"]["problems"])
    [rec] = _clip_records(nogl_run)
    assert rec["status"] == "unavailable" and "MUJOCO_GL=disable" in rec["reason"]
    assert not list(nogl_run.glob("final/*/*.mp4"))


def test_leaderboard_html_embeds_one_clip_per_method_and_task(hopper_run, push_run, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert analysis_main(["leaderboard", str(hopper_run), str(push_run), "--out", str(tmp_path),
                              "--n-resamples", "200", "--bt-resamples", "20", "--curve-resamples", "50"]) == 0
    html = (tmp_path / "leaderboard.html").read_text()
    for name in ("mujoco-hopper-eureka.mp4", "metaworld-push-eureka.mp4"):
        assert f'<video src="clips/{name}"' in html
        assert len(_decode(tmp_path / "clips" / name)) > 1
    score = json.loads((hopper_run / "result.json").read_text())["returned_score"]
    assert f"returned score {score:.3f}" in html


def test_video_spec_follows_record_and_every(compose_cfg):
    none = compose_cfg("video.record=none")
    assert video_spec(none, "final") is None and video_spec(none, "candidate", 1) is None
    ret = compose_cfg("video.record=returned")
    assert video_spec(ret, "final", candidate_id="it1-c0").meta["candidate_id"] == "it1-c0"
    assert video_spec(ret, "candidate", 1) is None
    every = compose_cfg("video.record=all_candidates", "video.every=3", "budget.max_iterations=4")
    filmed = [it for it in (1, 2, 3, 4) if video_spec(every, "candidate", it) is not None]
    assert filmed == [3, 4]  # every third, and the last


def test_gl_backend_says_why_rendering_is_unavailable(monkeypatch):
    monkeypatch.setenv("MUJOCO_GL", "disable")
    with pytest.raises(RenderingUnavailable, match="switched off"):
        gl_backend()
    monkeypatch.delenv("MUJOCO_GL")
    monkeypatch.setattr("ctypes.util.find_library", lambda name: None)
    with pytest.raises(RenderingUnavailable, match="libosmesa6"):
        gl_backend()


def test_bad_video_settings_fail_before_any_work(compose_cfg):
    from bird.config.load import ConfigError

    with pytest.raises(ConfigError, match="video.record"):
        compose_cfg("video.record=sometimes")
    with pytest.raises(ConfigError, match="video.frame_skip"):
        compose_cfg("video.frame_skip=0")
