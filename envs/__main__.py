"""`python -m bird.envs list [format=text|markdown] | smoke [tasks=all|a,b] | demos env=<suite>/<task> n=16 seed=0 [kind=both expert=auto steps=1000000
expert_seed=0] | frames env=... out=x.gif | check TASK [episodes=2 seed=0 horizon=0] | describe TASK [view=...]
| anchor TASK [episodes=100 seed=0]`.

list: the task catalogue (envs/catalogue.py; markdown = docs/tasks.md). smoke: a budget=smoke search on each task
(`make catalogue`), appended to bench/results/catalogue_smoke.csv.
demos: expert=scripted records the task's scripted expert; expert=ppo trains a PPO expert on the task's reference
reward for `steps` env steps (cached with its training record, bird/learners/expert.py) and records it; auto picks
scripted where the task has one.

TASK is an env id (gym/pendulum) or the path of a task file (my_task.yaml); `check` exits 1 on a problem. A task file
that is not on the config search path is received (docs/security.md): one naming code or files is refused unless
--trust-config."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from bird.envs.demos import demo_path, env_config, load_demos

__all__ = ["main"]

_DEFAULTS: dict[str, dict[str, Any]] = {
    "list": {"format": "text"},
    "smoke": {"tasks": "all"},
    "demos": {"env": None, "n": 16, "seed": 0, "kind": "both", "expert": "auto", "steps": 1_000_000, "expert_seed": 0},
    "frames": {"env": None, "seed": 0, "policy": "expert", "out": "frames.gif", "max_steps": 0, "every": 2},
    "check": {"episodes": 2, "seed": 0, "horizon": 0},  # horizon 0: the task's own
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


def _list(a: dict[str, Any]) -> None:
    from bird.envs.catalogue import catalogue, render_markdown, render_text

    renders = {"text": render_text, "markdown": render_markdown}
    if a["format"] not in renders:
        raise SystemExit(f"bad format={a['format']!r}; allowed: {sorted(renders)}")
    print(renders[a["format"]](catalogue()), end="\n" if a["format"] == "text" else "")


def _smoke(a: dict[str, Any]) -> None:
    from bird.envs.catalogue import catalogue
    from bird.envs.catalogue_smoke import run_smoke

    rows = catalogue()
    wanted = None if a["tasks"] == "all" else set(a["tasks"].split(","))
    unknown = sorted((wanted or set()) - {r.env_id for r in rows})
    if unknown:
        raise SystemExit(f"unknown task(s) {unknown}; the catalogue's: {[r.env_id for r in rows]}")
    done = run_smoke([r for r in rows if wanted is None or r.env_id in wanted])
    print(f"{sum(d['passed'] == 'yes' for d in done)} of {len(done)} smoke searches passed")


def _expert(a: dict[str, Any]) -> Any:
    """The ExpertSource `expert=` picks (None: the task's scripted expert); a PPO expert trains here when not cached."""
    from bird.config.validate_task import demo_expert
    from bird.envs.registry import split_env_id
    from bird.learners.expert import ppo_expert
    from bird.learners.sb3_ppo import train_ppo
    from bird.registry import get

    env = env_config(a["env"])
    if demo_expert(a["expert"], get("suite", split_env_id(env.id)[0]).offers(env), env.id) == "scripted":
        return None
    print(f"PPO expert of {env.id}: {a['steps']:,} env steps on the reference reward, seed {a['expert_seed']} "
          "(trained unless cached)")
    return ppo_expert(env, a["steps"], a["expert_seed"], train_ppo)


def _demos(a: dict[str, Any]) -> None:
    kinds = ["expert", "random"] if a["kind"] == "both" else [a["kind"]]
    expert = _expert(a) if "expert" in kinds else None
    for kind in kinds:
        demos = load_demos(a["env"], a["n"], a["seed"], kind, expert=expert)
        print(f"{kind:7} {demos.env_id} n={demos.n} success_rate={demos.success_rate:.3f} -> "
              f"{demo_path(a['env'], a['n'], a['seed'], kind, expert)}")
    if expert is not None:
        print(f"expert: {expert.description}")


def _frames(a: dict[str, Any]) -> None:
    from bird.envs.frames import render_episode, write_video
    from bird.envs.registry import make_adapter

    adapter = make_adapter(env_config(a["env"], a["trust"]))
    policy = adapter.expert_policy() if a["policy"] == "expert" else None
    frames = render_episode(adapter, a["seed"], policy, max_steps=a["max_steps"] or None, every=a["every"])
    print(write_video(frames, a["out"]), f"{len(frames)} frames")


def _check(task: str, a: dict[str, Any]) -> int:
    from dataclasses import replace

    from bird.envs.check import check_task

    env = env_config(task, a["trust"])
    if a["horizon"] > 0:  # shorter episodes: a quick check of many tasks (the suite checks every task at 50 steps)
        env = replace(env, horizon=min(env.horizon, a["horizon"]))
    report = check_task(env, a["episodes"], a["seed"])
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
        {"list": _list, "smoke": _smoke, "demos": _demos, "frames": _frames}[ns.command](a)
    except ValueError as exc:
        raise SystemExit(f"error: {exc}") from exc


if __name__ == "__main__":
    main(sys.argv[1:])
