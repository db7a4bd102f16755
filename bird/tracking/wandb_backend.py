"""Weights & Biases: offline by default (files under <run dir>/wandb; `wandb sync` uploads them later).

Each step axis has its own step metric (candidate/n, iteration/n, final/n), so candidate and iteration charts
share one W&B run without fighting over its global step."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bird.config.schema import TrackerConfig
from bird.tracking.base import Tracker

__all__ = ["WandbTracker"]


class WandbTracker(Tracker):
    name = "wandb"
    takes_videos = True

    def __init__(self, cfg: TrackerConfig, root: Path, meta: dict[str, Any]) -> None:
        import wandb

        self.wandb = wandb
        self.dir = Path(cfg.dir) if cfg.dir else root
        self.dir.mkdir(parents=True, exist_ok=True)
        settings = wandb.Settings(console="off", silent=True, x_disable_stats=True, disable_git=True,
                                  save_code=False, x_disable_meta=True)
        resume = meta.get("resume") or {}  # a resumed search logs to the same run id ("allow": W&B appends)
        self.run = wandb.init(project=cfg.project, dir=str(self.dir), mode=cfg.mode, name=meta["name"],
                              config=meta["config"], tags=[meta["method"], meta["env"]], settings=settings,
                              reinit="create_new", id=resume.get("id"), resume="allow" if resume.get("id") else None)
        _drop_links_leaving(self.dir)
        for axis in ("candidate", "iteration", "final"):
            self.run.define_metric(f"{axis}/n")
            self.run.define_metric(f"{axis}/*", step_metric=f"{axis}/n")

    def log_metrics(self, metrics: dict[str, float], axis: str, step: int) -> None:
        self.run.log({**metrics, f"{axis}/n": step})

    def log_summary(self, values: dict[str, float]) -> None:
        self.run.summary.update(values)

    def log_artifact(self, path: Path, kind: str) -> None:
        art = self.wandb.Artifact(name=f"{kind}-{self.run.id}", type=kind)
        art.add_file(str(path))
        self.run.log_artifact(art)

    def log_video(self, path: Path, caption: str, step: int) -> None:
        self.run.log({"final/video": self.wandb.Video(str(path), caption=caption, format="mp4"), "final/n": step})

    def location(self) -> str:
        return str(Path(self.run.dir).parent)

    def identity(self) -> dict[str, Any]:
        return {"id": self.run.id}

    def close(self, ok: bool) -> None:
        self.run.finish(exit_code=0 if ok else 1)
        # finish() can return before the offline writer has flushed the last records (seen: a summary missing from
        # the run file); teardown waits for W&B's service to finish writing. The next wandb.init starts a new one.
        self.wandb.teardown()
        _drop_links_leaving(self.dir)


def _drop_links_leaving(root: Path) -> None:
    """Remove the links W&B leaves under root/wandb that point out of root (logs/debug-core.log -> its cache): a
    run directory holding such a link is refused for writing (bird/files.py), and they are debug-log pointers."""
    folder = root / "wandb"
    if not folder.is_dir():
        return
    for path in folder.rglob("*"):
        if path.is_symlink() and not path.resolve().is_relative_to(root.resolve()):
            path.unlink(missing_ok=True)
