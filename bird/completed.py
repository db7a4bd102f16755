"""Re-running a sweep skips cells whose run directory already holds a completed result of the same config; a
directory that is run again (unfinished, or `run.skip_completed=false`) loses the previous search's records first,
unless it holds a checkpoint to resume from (bird/checkpoint.py; the loop decides, holding the run lock)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from bird.config.load import ConfigError, config_hash
from bird.config.schema import BirdConfig
from bird.files import read_json

__all__ = ["completed_result", "clear_previous_run", "RUN_ENTRIES"]

# what a search writes into its run directory (docs/rundir.md); Hydra's .hydra/ and job log are not ours
# (run.lock is not: the process clearing the directory holds it)
RUN_ENTRIES = ("status.json", "config.yaml", "task.json", "events.jsonl", "llm_calls.jsonl", "candidates", "demos.json",
               "decomposition.json", "population.jsonl", "screens.jsonl", "expand", "final", "result.json",
               "search_state.json", "checkpoint.pkl", "lost_llm_calls.jsonl", "environment.json", "islands.jsonl",
               "critics.json", "subtasks.jsonl", "tracker.json", "tensorboard", "wandb", "mlruns")


def completed_result(run_dir: Path, cfg: BirdConfig) -> dict[str, Any] | None:
    """The finished result in `run_dir` for this config, None if there is none.

    Raises ConfigError when the directory holds a completed run of a different config.
    """
    try:
        status = read_json(run_dir / "status.json", "status", run_dir)
        result = read_json(run_dir / "result.json", "result", run_dir)
    except (OSError, ValueError):
        return None  # nothing finished here (or a half-written run, or a file bird does not read): run it again
    if not isinstance(status, dict) or not isinstance(result, dict):
        return None
    if status.get("state") != "completed" or result.get("status") != "completed":
        return None
    if result.get("config_hash") != config_hash(cfg):
        raise ConfigError(
            f"{run_dir} already holds a completed run of another config (hash {result.get('config_hash')} != "
            f"{config_hash(cfg)}); choose another hydra.run.dir or set run.skip_completed=false to overwrite it"
        )
    return result


def clear_previous_run(run_dir: Path) -> list[str]:
    """Remove a previous search's records from `run_dir` so the next search's append-only files start empty.

    Only the entries a search writes (RUN_ENTRIES) are removed; returns their names.
    """
    removed = []
    for name in RUN_ENTRIES:
        path = run_dir / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        else:
            continue
        removed.append(name)
    return removed
