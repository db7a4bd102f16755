"""`python -m bird.diff A B`: the resolved keys where two method configs differ (everything else equal)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from omegaconf import OmegaConf

from bird.config.load import ConfigError, compose

__all__ = ["method_diff"]


def _flatten(node: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(node, dict):
        out: dict[str, Any] = {}
        for key, value in node.items():
            out.update(_flatten(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: node}


def method_diff(a: str, b: str, overrides: list[str] | None = None,
                extra_b: list[str] | None = None) -> dict[str, tuple[Any, Any]]:
    """{dotted key: (value in a, value in b)} for every key whose resolved value differs; `overrides` apply to both,
    `extra_b` to b only (e.g. a design-choice flip)."""
    flat = []
    for method, extra in ((a, []), (b, extra_b or [])):
        cfg = compose([f"method={method}", *(overrides or []), *extra])
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
    width = max((len(k) for k in diff), default=3)
    print(f"{'key':<{width}}  {args.a}  →  {args.b}")
    for key, (va, vb) in diff.items():
        print(f"{key:<{width}}  {va!r}  →  {vb!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
