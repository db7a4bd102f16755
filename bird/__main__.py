"""`python -m bird [overrides]`: compose the config with Hydra, validate it, run one search."""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from bird.config.load import ConfigError, load_config, register_configs

register_configs()


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
def main(cfg: DictConfig) -> None:
    try:
        bcfg = load_config(cfg)
    except ConfigError as exc:
        print(f"bird: {exc}", file=sys.stderr)
        sys.exit(2)
    choice = HydraConfig.get().runtime.choices.get("choice")
    if choice and choice not in bcfg.choices:
        bcfg.choices.append(choice)
    from bird.completed import clear_previous_run, completed_result
    from bird.llm.api_base import MissingAPIKeyError
    from bird.loop import search

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        done = completed_result(run_dir, bcfg) if bcfg.run.skip_completed else None
    except ConfigError as exc:
        print(f"bird: {exc}", file=sys.stderr)
        sys.exit(2)
    if done is not None:
        print(f"bird: {run_dir} already completed (returned_score {done.get('returned_score')}); skipped")
        return
    if clear_previous_run(run_dir):
        print(f"bird: {run_dir} held a previous run's records; they are replaced by this run", file=sys.stderr)
    from bird.tracking import TrackerUnavailable

    try:
        search(bcfg, run_dir)
    except (MissingAPIKeyError, TrackerUnavailable) as exc:
        print(f"bird: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
