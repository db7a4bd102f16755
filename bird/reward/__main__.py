"""`python -m bird.reward check FILE env=mujoco/hopper`: the verify checks on a file; JSON verdict, exit 0/1.

A program that imports jax is checked as reward.language=jax (traced and exported in the sandbox) unless the
overrides say otherwise."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bird.config.load import ConfigError, compose
from bird.envs.registry import make_adapter
from bird.stages.verify import random_transitions, verify_code

__all__ = ["main"]


def _imports_jax(code: str) -> bool:
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    return any(name.split(".")[0] == "jax" for name in names)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bird.reward", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="run the static and smoke checks on a reward program")
    check.add_argument("file", type=Path)
    check.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. env=mujoco/hopper verify.smoke_steps=128")
    args = parser.parse_args(argv)
    try:
        code = args.file.read_text()
    except OSError as exc:
        print(json.dumps({"valid": False, "file": str(args.file), "failure": {"kind": "io_error", "reason": str(exc)}}))
        return 1
    overrides = list(args.overrides)
    if not any(o.startswith("reward.language=") for o in overrides) and _imports_jax(code):
        overrides.append("reward.language=jax")  # a jax.numpy program is checked (and traced) as one
    try:
        cfg = compose(overrides)
    except (ConfigError, Exception) as exc:  # noqa: BLE001 - Hydra raises several types for a bad override
        print(f"bird.reward: {exc}", file=sys.stderr)
        return 2
    adapter = make_adapter(cfg.env)
    batch = random_transitions(adapter, cfg.verify.smoke_steps, cfg.seed)
    result = verify_code(code, cfg, batch, adapter.spec)
    verdict = {
        "valid": result.ok, "file": str(args.file), "env": cfg.env.id,
        "failure": result.failure.to_json() if result.failure else None,
        "components": list(result.components), "checks": result.checks, "language": cfg.reward.language,
    }
    print(json.dumps(verdict, indent=1))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
