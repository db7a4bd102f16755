"""Experiment trackers (registry family `tracker`; `tracker=none|tensorboard|wandb|mlflow`). Each backend's SDK is
imported only when that backend is opened, so `python -m bird --help` never loads one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bird.config.schema import TrackerConfig
from bird.registry import register
from bird.tracking.base import NullTracker, Tracker, TrackerUnavailable
from bird.tracking.observer import RunTracker, open_tracker

__all__ = ["Tracker", "TrackerUnavailable", "RunTracker", "open_tracker"]


@register("tracker", "none")
def _none(cfg: TrackerConfig, root: Path, meta: dict[str, Any]) -> Tracker:
    return NullTracker()


@register("tracker", "tensorboard")
def _tensorboard(cfg: TrackerConfig, root: Path, meta: dict[str, Any]) -> Tracker:
    from bird.tracking.tb_backend import TensorBoardTracker

    return TensorBoardTracker(cfg, root, meta)


@register("tracker", "wandb")
def _wandb(cfg: TrackerConfig, root: Path, meta: dict[str, Any]) -> Tracker:
    from bird.tracking.wandb_backend import WandbTracker

    return WandbTracker(cfg, root, meta)


@register("tracker", "mlflow")
def _mlflow(cfg: TrackerConfig, root: Path, meta: dict[str, Any]) -> Tracker:
    from bird.tracking.mlflow_backend import MlflowTracker

    return MlflowTracker(cfg, root, meta)
