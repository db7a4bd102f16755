"""Frames: offscreen RGB rendering of a rollout and the GIF writer (skipped where no GL library loads)."""

from __future__ import annotations

import numpy as np
import pytest

from bird.config.schema import EnvConfig
from bird.envs.frames import RenderingUnavailable, gl_backend, render_episode, write_video
from bird.envs.registry import make_adapter


@pytest.fixture(scope="module")
def frames():
    adapter = make_adapter(EnvConfig(id="metaworld/reach", description="x", horizon=500))
    try:
        gl_backend()
        return render_episode(adapter, seed=0, policy=adapter.expert_policy(), max_steps=6, every=3, width=64, height=48)
    except RenderingUnavailable as exc:
        pytest.skip(f"no offscreen GL: {exc}")


def test_render_episode_returns_rgb_frames_of_the_rollout(frames):
    assert len(frames) == 3  # reset frame + steps 3 and 6
    assert all(f.shape == (48, 64, 3) and f.dtype == np.uint8 for f in frames)
    assert frames[0].std() > 0  # not a blank image
    assert np.abs(frames[0].astype(int) - frames[-1]).sum() > 0  # the arm moved


def test_write_video_writes_a_gif_that_reads_back(frames, tmp_path):
    import imageio.v3 as iio

    path = write_video(frames, tmp_path / "episode.gif")
    assert iio.imread(path).shape == (3, 48, 64, 3)


def test_write_video_rejects_unknown_formats(tmp_path):
    with pytest.raises(ValueError, match="use .gif or .mp4"):
        write_video([np.zeros((4, 4, 3), np.uint8)], tmp_path / "x.avi")


def test_mp4_reads_back_and_captions_burn_into_the_top_left_corner(tmp_path):
    import imageio.v3 as iio

    from bird.envs.frames import caption_frames

    frames = [np.full((48, 64, 3), 120 + 10 * i, np.uint8) for i in range(5)]
    captioned = caption_frames(frames, "push | score 1.000")
    assert captioned[0].shape == frames[0].shape
    band, rest = captioned[0][:8].astype(int), captioned[0][30:].astype(int)
    assert np.abs(band - 120).mean() > 30 and np.abs(rest - 120).max() == 0  # only the corner band changed
    back = iio.imread(write_video(captioned, tmp_path / "clip.mp4", fps=10), extension=".mp4")
    assert back.shape == (5, 48, 64, 3)
    assert abs(float(back[-1][30:].mean()) - 160) < 3  # H.264 is lossy, but the content survives
