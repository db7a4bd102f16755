"""`python -m bird [overrides]`: compose the config with Hydra, validate it, run one search. With `--plan`, print
what the run or sweep (`-m`) would cost instead (bird.plan) and run nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from bird.config.load import CONF_DIR, ConfigError, composed_choices, load_config, register_configs
from bird.config.searchpath import user_dirs
from bird.config.validate_task import description_warning

register_configs()


@hydra.main(version_base="1.3", config_path=str(CONF_DIR), config_name="config")
def main(cfg: DictConfig) -> None:
    try:
        bcfg = load_config(cfg)
    except ConfigError as exc:
        print(f"bird: {exc}", file=sys.stderr)
        sys.exit(2)
    overrides = HydraConfig.get().overrides
    bcfg.choices = list(dict.fromkeys([*bcfg.choices, *composed_choices([*overrides.hydra, *overrides.task])]))
    warning = description_warning(list(overrides.task), bcfg.env.id)
    if warning:
        print(f"bird: warning: {warning}", file=sys.stderr)
    from bird.checkpoint import CheckpointError
    from bird.completed import DONE, SearchNotDone, completed_result
    from bird.files import UnsafeFileError
    from bird.llm.api_base import MissingAPIKeyError
    from bird.loop import search
    from bird.runlock import RunLockedError

    run_dir = Path(HydraConfig.get().runtime.output_dir)
    try:
        done = completed_result(run_dir, bcfg) if bcfg.run.skip_completed else None
    except ConfigError as exc:
        print(f"bird: {exc}", file=sys.stderr)
        sys.exit(2)
    if done is not None:
        print(f"bird: {run_dir} already completed (returned_score {done.get('returned_score')}); skipped")
        return
    from bird.sweeps import cell_limits
    from bird.tracking import TrackerUnavailable

    try:
        result = search(bcfg, run_dir, cell_limits(bcfg))
    except (MissingAPIKeyError, TrackerUnavailable, ConfigError, CheckpointError, UnsafeFileError) as exc:
        print(f"bird: {exc}", file=sys.stderr)
        sys.exit(2)
    except RunLockedError as exc:
        print(f"bird: {exc}", file=sys.stderr)
        sys.exit(3)
    if result["status"] != DONE:
        message = f"bird: {run_dir}: the search ended {result['status']}: {result['status_reason']}"
        if HydraConfig.get().mode == RunMode.MULTIRUN:
            raise SearchNotDone(message)  # Hydra records the cell as failed, runs the others, exits non-zero
        print(message, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    try:
        user_dirs()
    except ConfigError as exc:
        print(f"bird: {exc}", file=sys.stderr)
        sys.exit(2)
    if "--plan" in sys.argv[1:]:
        from bird.plan import main as plan

        sys.exit(plan([a for a in sys.argv[1:] if a != "--plan"]))
    main()
