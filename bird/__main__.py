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
    from bird.llm.api_base import MissingAPIKeyError
    from bird.loop import search

    try:
        search(bcfg, Path(HydraConfig.get().runtime.output_dir))
    except MissingAPIKeyError as exc:
        print(f"bird: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
