"""`python -m bird.resume DIR [key=value ...]`: continue a search from its run directory alone.

The saved config.yaml is the config; overrides may change execution-only keys (train.executor, ray.address,
train.workers, ...), never what the search computes (the checkpoint's config hash must match).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from bird.config.load import ConfigError, load_config
from bird.config.schema import BirdConfig

__all__ = ["saved_config", "main"]


def saved_config(run_dir: Path, overrides: list[str] | None = None) -> BirdConfig:
    """The validated config saved in `run_dir/config.yaml`, with dotlist overrides applied."""
    path = run_dir / "config.yaml"
    if not path.is_file():
        raise ConfigError(f"{run_dir} has no config.yaml: not a bird run directory")
    try:
        cfg = OmegaConf.merge(OmegaConf.structured(BirdConfig), OmegaConf.load(path),
                              OmegaConf.from_dotlist(list(overrides or [])))
    except (OmegaConfBaseException, ValueError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return load_config(cfg)  # type: ignore[arg-type]


def _ended(run_dir: Path) -> str | None:
    """"ended <state>: <reason>" when the directory holds a search that ran to an end other than completed."""
    import json

    try:
        status = json.loads((run_dir / "status.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(status, dict) or status.get("state") in (None, "running", "completed"):
        return None
    return f"ended {status['state']}: {status.get('error')}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bird.resume", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("overrides", nargs="*", help="execution-only key=value overrides")
    args = parser.parse_args(argv)
    from bird.checkpoint import CHECKPOINT_NAME, CheckpointError
    from bird.completed import DONE, completed_result
    from bird.llm.api_base import MissingAPIKeyError
    from bird.loop import search
    from bird.runlock import RunLockedError

    try:
        cfg = saved_config(args.run_dir, args.overrides)
        done = completed_result(args.run_dir, cfg)
        if done is not None:
            print(f"bird: {args.run_dir} already completed (returned_score {done.get('returned_score')}); nothing to do")
            return 0
        if not (args.run_dir / CHECKPOINT_NAME).exists():
            why = _ended(args.run_dir) or "has no checkpoint (killed before set-up finished)"
            print(f"bird: {args.run_dir} {why}; starting the search over", file=sys.stderr)
        result = search(cfg, args.run_dir)
    except (ConfigError, CheckpointError, MissingAPIKeyError) as exc:
        print(f"bird: {exc}", file=sys.stderr)
        return 2
    except RunLockedError as exc:
        print(f"bird: {exc}", file=sys.stderr)
        return 3
    if result["status"] != DONE:
        print(f"bird: {args.run_dir}: the search ended {result['status']}: {result['status_reason']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
