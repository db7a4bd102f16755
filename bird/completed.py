"""Re-running a sweep skips cells whose run directory already holds a completed result of the same config."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bird.config.load import ConfigError, config_hash
from bird.config.schema import BirdConfig

__all__ = ["completed_result"]


def completed_result(run_dir: Path, cfg: BirdConfig) -> dict[str, Any] | None:
    """The finished result in `run_dir` for this config, None if there is none.

    Raises ConfigError when the directory holds a completed run of a different config.
    """
    status_path, result_path = run_dir / "status.json", run_dir / "result.json"
    try:
        status = json.loads(status_path.read_text())
        result = json.loads(result_path.read_text())
    except (OSError, ValueError):
        return None  # nothing finished here (or a half-written run): run it again
    if status.get("state") != "completed" or result.get("status") != "completed":
        return None
    if result.get("config_hash") != config_hash(cfg):
        raise ConfigError(
            f"{run_dir} already holds a completed run of another config (hash {result.get('config_hash')} != "
            f"{config_hash(cfg)}); choose another hydra.run.dir or set run.skip_completed=false to overwrite it"
        )
    return result
