"""`python -m bird.diff A B`: the resolved keys where two method configs differ (everything else equal)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import yaml
from omegaconf import OmegaConf

from bird.config.load import ConfigError, compose
from bird.config.searchpath import find, options
from bird.config.task_for import task_for

__all__ = ["method_diff", "shared_env"]


def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(_flatten(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: node}


def shared_env(a: str, b: str, overrides: list[str] | None = None) -> str | None:
    """A task both methods run on when one of them is written for some suites only (generate.suites): the first
    task, by name (aliases with '-' last), of the first suite both allow; None when neither restricts its suites or
    none is shared. Method and env files come from the whole config search path."""
    allowed = []
    for method in (a, b):
        path = find("method", method, overrides or [])
        data = yaml.safe_load(path.read_text()) if path is not None else None
        suites = ((data or {}).get("generate") or {}).get("suites") or []
        if suites:
            allowed.append(list(suites))
    if not allowed:
        return None
    common = [s for s in allowed[0] if all(s in other for other in allowed)]
    tasks = sorted(options(f"env/{common[0]}", overrides or []), key=lambda t: ("-" in t, t)) if common else []
    return f"{common[0]}/{tasks[0]}" if tasks else None


def method_diff(a: str, b: str, overrides: list[str] | None = None,
                extra_b: list[str] | None = None) -> dict[str, tuple[Any, Any]]:
    """{dotted key: (value in a, value in b)} for every key whose resolved value differs (on a task both run on,
    shared_env, unless the overrides name one); `overrides` apply to both, `extra_b` to b only (e.g. a design-choice
    flip)."""
    overrides = list(overrides or [])
    known = options("method", overrides)
    unknown = [m for m in (a, b) if m not in known]
    if unknown:
        raise ConfigError(f"method {unknown[0]!r} unknown; allowed: {known}")
    env = shared_env(a, b, overrides)
    if env and not any(o.startswith("env=") for o in overrides):
        overrides.append(f"env={env}")
    overrides = task_for([a, b], overrides)  # a task both run on (the default task may refuse one)
    flat = []
    for method, extra in ((a, []), (b, extra_b or [])):
        cfg = compose([f"method={method}", *overrides, *extra])
        flat.append(_flatten(OmegaConf.to_container(OmegaConf.structured(cfg), resolve=True)))
    keys = sorted(set(flat[0]) | set(flat[1]))
    return {k: (flat[0].get(k), flat[1].get(k)) for k in keys if flat[0].get(k) != flat[1].get(k)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bird.diff", description=__doc__)
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides applied to both, e.g. env=mujoco/reacher")
    args = parser.parse_args(argv)
    try:
        diff = method_diff(args.a, args.b, args.overrides)
    except (ConfigError, Exception) as exc:  # noqa: BLE001 - Hydra raises several types for a bad name
        print(f"bird.diff: {exc}", file=sys.stderr)
        return 2
    env = shared_env(args.a, args.b, args.overrides)
    if env and not any(o.startswith("env=") for o in args.overrides):
        print(f"bird.diff: compared on env={env} (a method is written for some suites only)", file=sys.stderr)
    width = max((len(k) for k in diff), default=3)
    print(f"{'key':<{width}}  {args.a}  →  {args.b}")
    for key, (va, vb) in diff.items():
        print(f"{key:<{width}}  {va!r}  →  {vb!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
