"""`python -m bird.ablate BASE [--run]`: the design choices (conf/choice/) that apply to a base method, and the Hydra
multiruns of BASE against each one-key (or one-bundle) flip over tasks and seeds: BIRD's Fig. 5 design (BIRD paper, "A Bird's-Eye View of
Iterative Reward Design":
"effects of enabling 30 design choices across applicable baselines").

A choice applies to BASE when BASE + choice validates and changes at least one key that matters there. It does not
apply when it changes nothing, when what it changes is inert in that config (e.g. few-shot graph examples without a
graph decomposition), when it swaps the reward-program contract (the base's prompts ask for another program), or
when it swaps the base's prompt templates for another method's (a variant of the base's own, e.g. regot/no_graph for
regot, is a flip).
A choice's BIRD number is read from its file's header ("BIRD design choice (N)").
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from omegaconf import OmegaConf

from bird.config.load import CONF_DIR, ConfigError, compose
from bird.config.schema import BirdConfig
from bird.config.searchpath import ENV_VAR, find, options
from bird.config.task_for import task_for
from bird.diff import _flatten

__all__ = ["Choice", "choices", "applicable", "sweep_commands", "DEFAULT_ENVS"]

# BIRD paper Table 10: ERA-U's development tasks, where BIRD's hill-climb was measured
DEFAULT_ENVS = ("metaworld/pick_place", "metaworld/push", "metaworld/peg_insert_side", "metaworld/drawer_open")
_NUMBER = re.compile(r"design choice \((\d+)\)")


def _iterates(c: BirdConfig) -> bool:
    return c.loop.iterations > 1


def _trains(c: BirdConfig) -> bool:
    from bird.learners.job import learner_trains, loop_learner

    return learner_trains(loop_learner(c))


# key -> when it matters in a resolved config (keys not listed always matter)
_MATTERS: dict[str, Callable[[BirdConfig], bool]] = {
    "decompose.n_examples": lambda c: c.decompose.kind == "tag_graph",
    "decompose.retries": lambda c: c.decompose.kind != "none",
    "decompose.n_subtasks": lambda c: c.decompose.kind == "subtask_list",
    "generate.schedule_values": lambda c: c.generate.schedule == "explicit",
    # what carries from one iteration to the next matters only when there is a next iteration
    **{k: _iterates for k in ("generate.history", "generate.history_turns", "generate.parent", "generate.parent_thought",
                              "generate.prompt_mode", "generate.schedule", "decompose.co_evolve",
                              "select.require_improvement_over_incumbent")},
    "generate.behavioural_analysis": lambda c: _iterates(c) and _trains(c),
    "train.checkpoint_selection": _trains,
    "train.early_stop": _trains,
}
_NOT_FLIPS = {"method", "choices"}


@dataclass(frozen=True)
class Choice:
    name: str
    number: int | None  # BIRD's Fig. 5 / Table 5 number, when it has one
    summary: str  # the file's first comment sentence
    changes: dict[str, tuple[object, object]]  # key -> (base value, flipped value), keys that matter only
    reason: str | None = None  # why it does not apply (None = it applies)


def _header(name: str, overrides: list[str] | None = None) -> tuple[int | None, str]:
    path = find("choice", name, overrides or [])
    assert path is not None, name  # a name from choices()
    lines = [ln[1:].strip() for ln in path.read_text().splitlines() if ln.startswith("#") and "@package" not in ln]
    text = " ".join(lines)
    match = _NUMBER.search(text)
    return (int(match.group(1)) if match else None), text.split(". ")[0][:160]


def choices(overrides: list[str] | None = None) -> list[str]:
    """Every design choice on the config search path: conf/choice/ and a user's choice/ (BIRD_CONFIG_PATH)."""
    return options("choice", overrides or [])


def _flat(cfg: BirdConfig) -> dict[str, Any]:
    return _flatten(OmegaConf.to_container(OmegaConf.structured(cfg), resolve=True))


def _same_family(base: object, flipped: object) -> bool:
    """Whether two prompt template sets (methods/<set>/) are variants of one method's (`regot` and `regot/no_graph`)."""
    return str(base).split("/")[0] == str(flipped).split("/")[0]


def _assess(base: str, base_flat: dict[str, Any], name: str, overrides: list[str]) -> Choice:
    number, summary = _header(name, overrides)
    try:
        flipped = compose([f"method={base}", *overrides, f"+choice={name}"])
        flat = _flat(flipped)
        diff = {k: (base_flat.get(k), flat.get(k)) for k in sorted(set(base_flat) | set(flat))
                if base_flat.get(k) != flat.get(k)}
    except ConfigError as exc:
        return Choice(name, number, summary, {}, f"invalid on {base}: {str(exc).splitlines()[-1].strip(' -')}")
    changes = {k: v for k, v in diff.items() if k not in _NOT_FLIPS and _MATTERS.get(k, lambda c: True)(flipped)}
    if "reward.contract" in changes:
        return Choice(name, number, summary, changes, f"swaps the reward-program contract {changes['reward.contract']}")
    if "generate.prompt" in changes and not _same_family(*changes["generate.prompt"]):
        return Choice(name, number, summary, changes, f"swaps the prompt templates {changes['generate.prompt']}")
    if not changes:
        inert = sorted(set(diff) - _NOT_FLIPS)
        return Choice(name, number, summary, {}, f"changes nothing that matters on {base}" + (f" ({', '.join(inert)} inert)" if inert else ""))
    return Choice(name, number, summary, changes)


def applicable(base: str, overrides: list[str] | None = None, include_all: bool = False,
               names: list[str] | None = None) -> list[Choice]:
    """The choices (all, or `names`) that apply to `base` (with `include_all`, each with its reason when it does not)."""
    overrides = task_for([base], list(overrides or []))  # a task the base runs on (the default task may refuse it)
    base_flat = _flat(compose([f"method={base}", *overrides]))
    known = choices(overrides)
    out = [_assess(base, base_flat, name, overrides) if name in known
           else Choice(name, None, "", {}, f"no such choice (choice/{name}.yaml on the config search path)")
           for name in (names or known)]
    return out if include_all else [c for c in out if c.reason is None]


def sweep_commands(base: str, flips: list[Choice], envs: list[str], seeds: list[int], extra: list[str],
                   sweep_dir: str) -> list[list[str]]:
    """Two multiruns into one sweep directory: BASE as is, and BASE with each flip (one job per task × seed × flip)."""
    common = [f"method={base}", "env=" + ",".join(envs), "seed=" + ",".join(map(str, seeds)), *extra,
              f"hydra.sweep.dir={sweep_dir}"]
    cmd = [sys.executable, "-m", "bird", "-m"]
    return [cmd + common + ["hydra.sweep.subdir=${method}/${env.id}/seed${seed}"],
            cmd + common + ["+choice=" + ",".join(c.name for c in flips),
                            "hydra.sweep.subdir=${method}+${hydra:runtime.choices.choice}/${env.id}/seed${seed}"]]


def catalogue(methods: list[str]) -> str:
    """docs/choices.md: every choice with its keys and values, BIRD number, and the methods it applies to."""
    applies: dict[str, list[str]] = {c: [] for c in choices()}
    keys: dict[str, dict[str, object]] = {c: {} for c in choices()}
    for method in methods:
        try:
            rows = applicable(method)
        except ConfigError:  # refused on the default env (GRACE needs scripted-expert demos): on the sweep's tasks
            rows = applicable(method, [f"env={DEFAULT_ENVS[0]}"])
        for c in rows:
            applies[c.name].append(method)
            keys[c.name].update({k: b for k, (_, b) in c.changes.items()})
    lines = ["| choice | BIRD no. | keys → values | applies to |", "|---|---|---|---|"]
    for name in choices():
        number, summary = _header(name)
        flips = "; ".join(f"`{k}={v}`" for k, v in sorted(keys[name].items())) or "—"
        lines.append(f"| `{name}` | {f'({number})' if number else ''} | {flips} | {', '.join(applies[name]) or '—'} |")
    return "\n".join(lines) + "\n"


def _print_table(base: str, rows: list[Choice]) -> None:
    print(f"design choices for {base} ({sum(c.reason is None for c in rows)} apply):")
    for c in rows:
        num = f"({c.number})" if c.number else ""
        what = ", ".join(f"{k}: {a!r} → {b!r}" for k, (a, b) in c.changes.items()) if c.reason is None else c.reason
        print(f"  {num:>5} {c.name:<28} {what}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bird.ablate", description=__doc__.split("\n\n")[0])
    parser.add_argument("base", help="a method (conf/method/, or a user's on BIRD_CONFIG_PATH), e.g. eureka; "
                        "`catalogue` prints docs/choices.md's table")
    parser.add_argument("--envs", default=",".join(DEFAULT_ENVS), help="comma-separated env ids")
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    parser.add_argument("--budget", default="matched", help="budget option (conf/budget/)")
    parser.add_argument("--sweep-dir", default=None, help="multirun directory (default multirun/ablate-BASE)")
    parser.add_argument("--choices", default=None, help="comma-separated choice names: sweep only these (default: all that apply)")
    parser.add_argument("--all", action="store_true", help="also list the choices that do not apply, with the reason")
    parser.add_argument("--run", action="store_true", help="launch the two multiruns instead of printing them")
    parser.add_argument("overrides", nargs="*", help="extra Hydra overrides for every job (e.g. llm=anthropic)")
    args = parser.parse_intermixed_args(argv)  # overrides may follow the flags
    if args.base == "catalogue":
        print(catalogue(sorted(p.stem for p in (CONF_DIR / "method").glob("*.yaml"))), end="")
        return 0
    wanted = args.choices.split(",") if args.choices else None
    envs = args.envs.split(",")
    # a choice is assessed on the sweep's first task unless the overrides name an env
    on = [] if any(o.startswith("env=") for o in args.overrides) else [f"env={envs[0]}"]
    try:
        known = options("method", args.overrides)
        if args.base not in known:
            raise ConfigError(f"method {args.base!r} unknown; allowed: {known}")
        rows = applicable(args.base, [*on, *args.overrides], include_all=args.all or wanted is not None, names=wanted)
    except Exception as exc:  # noqa: BLE001 - Hydra raises several types for an unknown method
        print(f"bird.ablate: {exc}", file=sys.stderr)
        return 2
    _print_table(args.base, rows)
    flips = [c for c in rows if c.reason is None]
    refused = [c for c in rows if c.reason is not None and wanted is not None]
    if refused:
        print("bird.ablate: " + "; ".join(f"{c.name}: {c.reason}" for c in refused), file=sys.stderr)
        return 2
    if not flips:
        return 1
    seeds = [int(s) for s in args.seeds.split(",")]
    extra = [f"budget={args.budget}", *args.overrides]
    commands = sweep_commands(args.base, flips, envs, seeds, extra,
                              args.sweep_dir or f"multirun/ablate-{args.base.replace('/', '-')}")
    print(f"\n{len(seeds) * len(envs) * (1 + len(flips))} searches in two multiruns:")
    path = os.environ.get(ENV_VAR)  # the commands find a user's method and choices through it, as this one did
    for cmd in commands:
        print("  " + shlex.join([*([f"{ENV_VAR}={path}"] if path else []), "python", *cmd[1:]]))
    if args.run:
        for cmd in commands:
            status = subprocess.run(cmd).returncode
            if status:
                return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
