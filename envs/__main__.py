"""`python -m bird.envs list | demos env=<suite>/<task> n=16 seed=0 [kind=both] | frames env=... out=x.gif`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bird.envs.demos import available_envs, demo_path, env_config, load_demos

__all__ = ["main"]

_DEFAULTS: dict[str, dict[str, Any]] = {
    "list": {},
    "demos": {"env": None, "n": 16, "seed": 0, "kind": "both"},
    "frames": {"env": None, "seed": 0, "policy": "expert", "out": "frames.gif", "max_steps": 0, "every": 2},
}


def _kv(args: list[str], defaults: dict[str, Any]) -> dict[str, Any]:
    """Parse key=value args; values take the type of the default; unknown keys fail, naming the allowed ones."""
    out = dict(defaults)
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep or key not in defaults:
            raise SystemExit(f"bad argument {arg!r}; expected key=value with key in {sorted(defaults)}")
        out[key] = type(defaults[key])(value) if defaults[key] is not None else value
    missing = [k for k, v in out.items() if v is None]
    if missing:
        raise SystemExit(f"missing required argument(s): {', '.join(f'{k}=...' for k in missing)}")
    return out


def _list() -> None:
    from bird.envs.registry import make_adapter

    print(f"{'env':34} {'suite':10} {'horizon':>7}  score")
    for env_id in available_envs():
        cfg = env_config(env_id)
        adapter = make_adapter(cfg)
        defn = getattr(adapter, "defn", None)
        score = getattr(defn, "score_definition", None) or adapter.spec.score_definition
        print(f"{cfg.id:34} {env_id.split('/')[0]:10} {cfg.horizon:>7}  {score}")


def _demos(a: dict[str, Any]) -> None:
    kinds = ["expert", "random"] if a["kind"] == "both" else [a["kind"]]
    for kind in kinds:
        demos = load_demos(a["env"], a["n"], a["seed"], kind)
        print(f"{kind:7} {demos.env_id} n={demos.n} success_rate={demos.success_rate:.3f} -> "
              f"{demo_path(a['env'], a['n'], a['seed'], kind)}")


def _frames(a: dict[str, Any]) -> None:
    from bird.envs.frames import render_episode, write_video
    from bird.envs.registry import make_adapter

    adapter = make_adapter(env_config(a["env"]))
    policy = adapter.expert_policy() if a["policy"] == "expert" else None
    frames = render_episode(adapter, a["seed"], policy, max_steps=a["max_steps"] or None, every=a["every"])
    print(write_video(frames, a["out"]), f"{len(frames)} frames")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bird.envs", description=__doc__)
    parser.add_argument("command", choices=sorted(_DEFAULTS))
    parser.add_argument("args", nargs="*", help="key=value")
    ns = parser.parse_args(argv)
    try:
        a = _kv(ns.args, _DEFAULTS[ns.command])
        {"list": lambda _: _list(), "demos": _demos, "frames": _frames}[ns.command](a)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from exc


if __name__ == "__main__":
    main(sys.argv[1:])
