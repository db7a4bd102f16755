"""TensorBoard: scalars in event files (torch.utils.tensorboard, which needs the tensorboard package).

TensorBoard has no artefact store and plays no MP4, so the reward code and config go in as text, and files
(reward, result, clips) are copied next to the event files under artifacts/."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from bird.config.schema import TrackerConfig
from bird.tracking.base import Tracker

__all__ = ["TensorBoardTracker"]


class TensorBoardTracker(Tracker):
    name = "tensorboard"
    takes_videos = False

    def __init__(self, cfg: TrackerConfig, root: Path, meta: dict[str, Any]) -> None:
        import tensorboard  # noqa: F401  (a clear ImportError when the package is missing)
        from torch.utils.tensorboard import SummaryWriter

        resume = meta.get("resume") or {}
        # the log directory the local config names (a resumed search finds its first session's there): never the one
        # tracker.json records, which a received run directory could point anywhere (docs/security.md)
        self.dir = Path(cfg.dir) / f"{meta['method']}-{meta['env'].replace('/', '-')}-s{meta['seed']}-{meta['config_hash']}" \
            if cfg.dir else root / "tensorboard"
        self.writer = SummaryWriter(log_dir=str(self.dir))  # a resumed search adds an event file to the same run
        if not resume:
            rows = "\n".join(f"| {k} | {v} |" for k, v in meta["config"].items())
            self.writer.add_text("config", f"| key | value |\n|---|---|\n{rows}", 0)

    def log_metrics(self, metrics: dict[str, float], axis: str, step: int) -> None:
        for key, value in metrics.items():
            self.writer.add_scalar(key, value, global_step=step)
        if axis != "candidate":  # once an iteration: a killed search keeps what it logged up to its last iteration
            self.writer.flush()

    def identity(self) -> dict[str, Any]:
        return {"dir": str(self.dir)}

    def log_summary(self, values: dict[str, float]) -> None:
        for key, value in values.items():
            self.writer.add_scalar(f"summary/{key}", value, global_step=0)

    def log_artifact(self, path: Path, kind: str) -> None:
        dest = self.dir / "artifacts" / kind
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, dest / path.name)
        if kind == "reward":  # shown in the Text tab, indented as a Markdown code block
            self.writer.add_text("returned_reward", "\n".join("    " + line for line in path.read_text().splitlines()), 0)

    def log_video(self, path: Path, caption: str, step: int) -> None:
        self.log_artifact(path, "video")
        self.writer.add_text("videos", f"{caption}: artifacts/video/{path.name}", step)

    def location(self) -> str:
        return str(self.dir)

    def close(self, ok: bool) -> None:
        self.writer.add_scalar("summary/completed", float(ok), global_step=0)
        self.writer.close()
