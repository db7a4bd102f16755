"""`python -m bird.resume DIR [key=value ...]`: continue a search from its run directory alone.

The saved config.yaml is the config; overrides may change execution-only keys (train.executor, ray.address,
train.workers, ...), never what the search computes (the checkpoint's config hash must match). The saved config is
read as data (bird/config/received.py): its endpoints, credentials and paths are this machine's, and a sandbox or
trainer limit looser than this machine's, or a task naming code or files that is not your own task file
(bird/config/received_task.py), stops the resume, unless --trust-config.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from bird.config.load import ConfigError, load_config
from bird.config.overrides import apply_overrides
from bird.config.received import adopt, load_received
from bird.config.schema import BirdConfig

__all__ = ["saved_config", "main"]


def saved_config(run_dir: Path, overrides: list[str] | None = None, trust: bool = False,
                 notes: list[str] | None = None) -> BirdConfig:
    """The validated config saved in `run_dir/config.yaml`, its authority keys from this machine unless `trust`
    (bird/config/received.py), with the overrides applied (Hydra's prefixes: bird/config/overrides.py); what
    differed is appended to `notes`."""
    path = run_dir / "config.yaml"
    if not path.is_file():
        raise ConfigError(f"{run_dir} has no config.yaml: not a bird run directory")
    data, adopted = adopt(load_received(path), list(overrides or []), trust)
    if notes is not None:
        notes.extend(adopted)
    try:
        cfg = OmegaConf.merge(OmegaConf.structured(BirdConfig), data)
    except (OmegaConfBaseException, ValueError) as exc:
        raise ConfigError(f"{path}: {exc}") from None
    apply_overrides(cfg, list(overrides or []))
    return load_config(cfg)  # type: ignore[arg-type]


def _ended(run_dir: Path) -> str | None:
    """"ended <state>: <reason>" when the directory holds a search that ran to an end other than completed."""
    from bird.escape import terminal
    from bird.files import read_json

    try:
        status = read_json(run_dir / "status.json", "status", run_dir)
    except (OSError, ValueError):
        return None
    if not isinstance(status, dict) or status.get("state") in (None, "running", "completed"):
        return None
    return terminal(f"ended {status['state']}: {status.get('error')}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bird.resume", description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("overrides", nargs="*", help="execution-only key=value overrides (Hydra's +key=value, "
                        "++key=value and ~key as Hydra defines them)")
    parser.add_argument("--trust-pickles", action="store_true",
                        help="convert the checkpoint.pkl an earlier bird wrote into the JSON checkpoint first; "
                             "unpickling runs code its writer chose: only for a directory you wrote yourself")
    parser.add_argument("--trust-config", action="store_true",
                        help="take the saved config's endpoints, credentials, paths, looser limits and the code its "
                             "task names as they are (default: this machine's; only for a directory you wrote "
                             "yourself)")
    args = parser.parse_args(argv)
    from bird.checkpoint import CHECKPOINT_NAME, PICKLE_NAME, CheckpointError, convert_pickle
    from bird.completed import DONE, completed_result
    from bird.llm.api_base import MissingAPIKeyError
    from bird.loop import search
    from bird.runlock import RunLock, RunLockedError

    try:
        notes: list[str] = []
        cfg = saved_config(args.run_dir, args.overrides, args.trust_config, notes)
        for note in notes:
            print(f"bird: {args.run_dir}/config.yaml: {note}", file=sys.stderr)
        done = completed_result(args.run_dir, cfg)
        if done is not None:
            print(f"bird: {args.run_dir} already completed (returned_score {done.get('returned_score')}); nothing to do")
            return 0
        if args.trust_pickles:
            with RunLock(args.run_dir):
                if convert_pickle(args.run_dir):
                    print(f"bird: converted {args.run_dir / PICKLE_NAME} into {CHECKPOINT_NAME} (you vouched for it)",
                          file=sys.stderr)
        if not (args.run_dir / CHECKPOINT_NAME).exists() and not (args.run_dir / PICKLE_NAME).exists():
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
