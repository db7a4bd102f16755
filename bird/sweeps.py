"""`python -m bird.sweeps [NAME...]`: the cells of a conf/sweep/ grid and what they cost, before launching it.

Counts cells exactly as Hydra's basic sweeper expands them (`hydra.sweeper.params` plus overrides) and plans
each cell's env steps from its composed config; CPU-hours divide those steps by a measured one-core training
throughput (`bench/bench_throughput.py`). LLM time and queueing are not included; `python -m bird.plan -m ...`
adds the LLM calls, tokens and dollars.

It also holds the sweep-wide LLM limits' two ends: `SweepCaps`, the Hydra callback (conf/config.yaml) that writes the
sweep's ledger before any cell starts and refuses a launcher whose cells cannot share it, and `cell_limits`, what a
cell of the sweep opens (bird.llm.sweep).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from bird.config.load import CONF_DIR, ConfigError, compose
from bird.config.schema import BirdConfig
from bird.config.searchpath import options

__all__ = ["sweep_names", "cells", "planned_env_steps", "estimate", "MEASURED_STEPS_PER_S", "SweepCaps",
           "cell_limits", "SHARED_SWEEP_DIR"]

# One bird training on one core at budget=matched's learner settings (SB3 PPO at its defaults on one env, as BIRD's
# matched runs), env steps per CPU second of the process (bench/bench_throughput.py --repeats 3, 2026-12-01, the
# 2-core development machine, shared: load 5-10): Hopper 1,182 / 1,300 / 1,299, Meta-World push 634 / 643 / 652.
# Medians below. The CPU rate is what one dedicated core does; the wall rate on the shared machine was 216 and 226.
# trainer=sb3_tuned (8 envs x 512 steps, VecNormalize) ran 2,522 and 816 in the same session (x1.9 and x1.3).
MEASURED_STEPS_PER_S = {"mujoco": 1_300.0, "metaworld": 640.0}


def sweep_names() -> list[str]:
    """Sweep files on the config search path: conf/sweep/ and a user's sweep/ (BIRD_CONFIG_PATH)."""
    return options("sweep")


def _sweep_params(name: str, overrides: list[str]) -> dict[str, str]:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from bird.config.load import register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = hydra_compose(config_name="config", overrides=[f"+sweep={name}", *overrides], return_hydra_config=True)
    return {str(k): str(v) for k, v in (cfg.hydra.sweeper.params or {}).items()}


def cells(name: str, overrides: list[str] | None = None) -> list[list[str]]:
    """Each cell's overrides (as `python -m bird -m +sweep=NAME OVERRIDES...` would launch them)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    overrides = list(overrides or [])
    params = _sweep_params(name, [o for o in overrides if "," not in o and "range(" not in o])
    parsed = OverridesParser.create().parse_overrides([f"{k}={v}" for k, v in params.items()] + overrides)
    return [cell for batch in BasicSweeper.split_arguments(parsed, None) for cell in batch]


def planned_env_steps(cfg: Any) -> int:
    """Env steps one search of `cfg` plans: loop trainings, GRACE-style expansions, final retrain, and every
    evaluation episode at full horizon (an upper bound: episodes may end early)."""
    from bird.config.needs import collect_episodes
    from bird.learners.job import final_learner, learner_trains, loop_learner
    from bird.loop import make_plan

    plan = make_plan(cfg)
    judged = plan.iterations - (0 if cfg.loop.feedback_on_last else 1)
    loop_trainings = sum(plan.schedule[:judged]) if learner_trains(loop_learner(cfg)) else 0  # RF-Agent: 6 + 4 × 8
    expansions = (plan.iterations - 1) // cfg.demos.rl_every if cfg.demos.rl_every else 0
    final = plan.final_seeds if cfg.final.retrain and learner_trains(final_learner(cfg)) else 0
    per_eval = cfg.budget.n_checkpoints * cfg.budget.eval_episodes * cfg.env.horizon
    collect = collect_episodes(cfg) * cfg.env.horizon
    return ((loop_trainings + expansions) * (plan.env_steps + per_eval + collect)
            + final * (plan.final_env_steps + per_eval))


def estimate(name: str, overrides: list[str] | None = None,
             steps_per_s: dict[str, float] | None = None) -> dict[str, Any]:
    """Cells, planned env steps and CPU-hours of sweep `name`, in total and per (method, suite)."""
    rates = {**MEASURED_STEPS_PER_S, **(steps_per_s or {})}
    shared = [o for o in (overrides or []) if "," not in o and "range(" not in o]
    planned: dict[tuple[str, ...], int] = {}
    groups: dict[tuple[str, str], dict[str, float]] = {}
    for cell in cells(name, overrides):
        key = tuple(o for o in cell if not o.startswith("seed="))
        if key not in planned:
            planned[key] = planned_env_steps(compose([f"+sweep={name}", *shared, *key]))
        cfg_method = next((o.split("=", 1)[1] for o in cell if o.startswith("method=")), "?")
        suite = next((o.split("=", 1)[1].split("/")[0] for o in cell if o.startswith("env=")), "?")
        g = groups.setdefault((cfg_method, suite), {"cells": 0, "env_steps": 0, "cpu_h": 0.0})
        g["cells"] += 1
        g["env_steps"] += planned[key]
        g["cpu_h"] += planned[key] / rates.get(suite, min(rates.values())) / 3600
    return {"sweep": name, "cells": sum(g["cells"] for g in groups.values()),
            "env_steps": sum(g["env_steps"] for g in groups.values()),
            "cpu_h": sum(g["cpu_h"] for g in groups.values()), "steps_per_s": rates,
            "by_method": {f"{m} × {s}": g for (m, s), g in sorted(groups.items())}}


# Launchers whose cells all see the sweep directory, where the sweep's ledger lives: the ones that run cells on this
# machine, and Slurm through submitit, whose own job folder (${hydra.sweep.dir}/.submitit) must already be on a
# filesystem every node mounts. Ray's cells run on nodes that may not see it: give each cell its share up front.
SHARED_SWEEP_DIR = {
    "hydra._internal.core_plugins.basic_launcher.BasicLauncher": "the basic launcher (one machine)",
    "hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher": "joblib (one machine)",
    "hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher": "submitit_local (one machine)",
    "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher":
        "submitit_slurm (its job folder is on a filesystem every node mounts)",
}


def _capped(budget: Any) -> bool:
    return budget.sweep_max_llm_calls is not None or budget.sweep_max_cost_usd is not None


def _n_cells(config: DictConfig) -> int:
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = config.hydra.sweeper.get("params") or {}
    task = list(config.hydra.overrides.task)
    parsed = OverridesParser.create().parse_overrides([f"{k}={v}" for k, v in params.items()] + task)
    return sum(len(batch) for batch in BasicSweeper.split_arguments(parsed, None))


class SweepCaps(Callback):
    """Before a capped sweep launches a cell: refuse a launcher whose cells cannot share the sweep directory (saying
    each cell's share instead), and write the caps into the sweep's ledger (bird.llm.sweep), keeping what earlier
    runs of the same sweep directory spent."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from bird.llm.sweep import SweepLedger

        budget = config.budget
        if not _capped(budget):
            return
        launcher = str(config.hydra.launcher.get("_target_", "?"))
        if launcher not in SHARED_SWEEP_DIR:
            n = _n_cells(config)
            share = [f"budget.max_llm_calls={budget.sweep_max_llm_calls // n}"] if budget.sweep_max_llm_calls else []
            if budget.sweep_max_cost_usd is not None:
                share.append(f"budget.max_cost_usd={budget.sweep_max_cost_usd / n:.4g}")
            print(f"bird: budget.sweep_max_llm_calls/sweep_max_cost_usd need a sweep directory every cell can lock, and "
                  f"the launcher {launcher} does not promise one (allowed: {', '.join(SHARED_SWEEP_DIR.values())}). "
                  f"Give each of the {n} cells its share up front instead: {' '.join(share)} (and no sweep cap)",
                  file=sys.stderr)
            sys.exit(2)
        ledger = SweepLedger(Path(config.hydra.sweep.dir))
        spent = ledger.set_caps(budget.sweep_max_llm_calls, budget.sweep_max_cost_usd)
        print(f"bird: sweep caps {budget.sweep_max_llm_calls} LLM calls, USD {budget.sweep_max_cost_usd}; spent so far "
              f"{spent['calls']} calls, USD {spent['cost_usd']:.4f} ({ledger.path})", file=sys.stderr)


def cell_limits(cfg: BirdConfig) -> Any:
    """The LLM limits a search shares with the other cells of its sweep (bird.llm.sweep.SweepLimits), None when it
    sets none. Raises ConfigError for sweep limits outside a multirun, or a capped cell that does not see the ledger."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from bird.llm.sweep import open_ledger

    capped = _capped(cfg.budget)
    if not capped and not cfg.llm.sweep_max_concurrency:
        return None
    hc = HydraConfig.get()
    if hc.mode != RunMode.MULTIRUN:
        raise ConfigError("budget.sweep_max_llm_calls, budget.sweep_max_cost_usd and llm.sweep_max_concurrency hold "
                          "across the cells of a sweep (python -m bird -m ...); for one search use budget.max_llm_calls, "
                          "budget.max_cost_usd and llm.max_concurrency")
    try:
        return open_ledger(Path(hc.sweep.dir), capped, cfg.llm.sweep_max_concurrency)
    except FileNotFoundError as exc:
        raise ConfigError(str(exc)) from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bird.sweeps", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help=f"sweeps in conf/sweep/ (default: all: {sweep_names()})")
    parser.add_argument("--override", action="append", default=[], help="an override, as on the sweep's command line")
    parser.add_argument("--steps-per-s", action="append", default=[], metavar="SUITE=RATE",
                        help=f"one-core training throughput per suite (default {MEASURED_STEPS_PER_S})")
    args = parser.parse_args(argv)
    try:
        rates = {k: float(v) for k, v in (item.split("=", 1) for item in args.steps_per_s)}
    except ValueError:
        print("bird.sweeps: --steps-per-s takes SUITE=RATE, e.g. mujoco=1500", file=sys.stderr)
        return 2
    for name in args.names or sweep_names():
        est = estimate(name, args.override, rates)
        print(f"+sweep={name}: {est['cells']} cells · {est['env_steps'] / 1e9:.2f} B env steps · "
              f"{est['cpu_h']:,.0f} CPU-h (one core per training at {est['steps_per_s']} env steps/s)")
        for group, g in est["by_method"].items():
            print(f"  {group:<24} {g['cells']:>4} cells  {g['env_steps'] / 1e6:>9,.0f} M steps  {g['cpu_h']:>8,.0f} CPU-h")
    return 0


if __name__ == "__main__":
    sys.exit(main())
