"""`python -m bird.envs list | demos env=<suite>/<task> n=16 seed=0 [kind=both] | frames env=... out=x.gif`
| check TASK [episodes=2 seed=0] | describe TASK [view=...] | anchor TASK [episodes=100 seed=0]`.

TASK is an env id (gym/pendulum) or the path of a task file (my_task.yaml); `check` exits 1 on a problem. A task file
that is not on the config search path is received (docs/security.md): one naming code or files is refused unless
--trust-config."""

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
    "check": {"episodes": 2, "seed": 0},
    "describe": {"view": ""},
    "anchor": {"episodes": 100, "seed": 0},
}
_TASK_COMMANDS = ("check", "describe", "anchor")  # their first argument is TASK


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

    adapter = make_adapter(env_config(a["env"], a["trust"]))
    policy = adapter.expert_policy() if a["policy"] == "expert" else None
    frames = render_episode(adapter, a["seed"], policy, max_steps=a["max_steps"] or None, every=a["every"])
    print(write_video(frames, a["out"]), f"{len(frames)} frames")


def _check(task: str, a: dict[str, Any]) -> int:
    from bird.envs.check import check_task

    report = check_task(env_config(task, a["trust"]), a["episodes"], a["seed"])
    for note in report.notes:
        print(f"note: {note}")
    for finding in report.problems:
        print(f"PROBLEM {finding}")
    print(f"{report.env_id}: " + ("ok" if report.ok else f"{len(report.problems)} problem(s)"))
    return 0 if report.ok else 1


def _describe(task: str, a: dict[str, Any]) -> int:
    from bird.envs.check import describe_task

    print(describe_task(env_config(task, a["trust"]), a["view"]), end="")
    return 0


def _anchor(task: str, a: dict[str, Any]) -> int:
    from bird.envs.check import measure_anchor
    from bird.envs.registry import make_adapter

    env = env_config(task, a["trust"])
    base = measure_anchor(make_adapter(env), a["episodes"], a["seed"])
    print(f"{env.id}: uniform-random quantity {base['quantity_mean']:.6g} (std {base['quantity_std']:.3g}, "
          f"{a['episodes']} episodes, seeds {a['seed']}..{a['seed'] + a['episodes'] - 1})")
    if env.task is not None:
        print(f"task file, under score:\n    random: {base['quantity_mean']:.6g}  # python -m bird.envs anchor {task} "
              f"episodes={a['episodes']} seed={a['seed']}")
    return 0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bird.envs", description=__doc__)
    parser.add_argument("command", choices=sorted(_DEFAULTS))
    parser.add_argument("args", nargs="*", help="TASK for check/describe/anchor, then key=value")
    parser.add_argument("--trust-config", action="store_true",
                        help="a task file from elsewhere than the config search path may name code and files (they "
                             "are imported and read); default: refused")
    ns = parser.parse_args(argv)
    args = list(ns.args)
    task = args.pop(0) if ns.command in _TASK_COMMANDS and args and "=" not in args[0] else None
    if ns.command in _TASK_COMMANDS and task is None:
        raise SystemExit(f"usage: python -m bird.envs {ns.command} TASK [key=value ...] (TASK: gym/pendulum or a .yaml)")
    try:
        a = {**_kv(args, _DEFAULTS[ns.command]), "trust": ns.trust_config}
        if task is not None:
            commands = {"check": _check, "describe": _describe, "anchor": _anchor}
            raise SystemExit(commands[ns.command](task, a))
        {"list": lambda _: _list(), "demos": _demos, "frames": _frames}[ns.command](a)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from exc


if __name__ == "__main__":
    main(sys.argv[1:])
