"""A Hydra callback (conf/config.yaml `hydra.callbacks`) that refuses a run or sweep directory holding links that
leave it, before Hydra writes `.hydra/`, its job log or `multirun.yaml` there (docs/security.md, "Trust boundary")."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from bird.files import UnsafeFileError, refuse_links_leaving

__all__ = ["RefuseLinksLeaving"]


class RefuseLinksLeaving(Callback):
    """Exit with status 2, naming the links, when the directory Hydra is about to write into holds any that leave
    it (a re-run into a received or re-used directory)."""

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        _check(config, "hydra.run.dir", "run directory")

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        _check(config, "hydra.sweep.dir", "sweep directory")


def _check(config: DictConfig, key: str, what: str) -> None:
    folder = OmegaConf.select(config, key)
    if folder is None:
        return
    try:
        refuse_links_leaving(Path(str(folder)), what)
    except UnsafeFileError as exc:
        print(f"bird: {exc}", file=sys.stderr)
        sys.exit(2)
