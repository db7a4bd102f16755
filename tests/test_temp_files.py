"""Training writes only inside its run directory: no /tmp/SB3-<timestamp> folder per training."""

from __future__ import annotations

import tempfile

from bird.learners.job import make_job
from bird.learners.sb3_ppo import train_ppo


def test_a_training_leaves_no_sb3_folder_in_the_temp_directory(compose_cfg, tmp_path, monkeypatch):
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))  # where SB3's default logger would put SB3-<timestamp>
    cfg = compose_cfg("env=mujoco/inverted_pendulum")
    result = train_ppo(make_job(cfg, "c0", None, 0, 512, tmp_path / "out"))
    assert result.ok
    assert [p.name for p in temp.iterdir() if p.name.startswith("SB3-")] == []
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["checkpoint.json", "curve.csv"]  # the shipped checkpoint (train.checkpoint_selection)
