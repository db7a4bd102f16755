"""`python -m bird.plan [-m] OVERRIDES...`: what a search or a sweep will cost before it runs: LLM calls by role,
tokens and dollars per method and in total, env steps and CPU-hours. No network, no training.

Calls are counted from the config (the plan's K per iteration, resamples, the judge's and the other LLM passes'
triggers); the range's low end has every candidate fail before training, its high end every resample and re-ask
used. Tokens come from each method's real first generation prompt for each task, rendered with the offline
generator; docs/llm.md ("Before a real sweep") states the rules for the rest.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bird.config.schema import BirdConfig

__all__ = ["ROLES", "Calls", "CellPlan", "llm_calls", "plan_cell", "plan", "summary", "report", "count_tokens", "main"]

#: Request purposes by role (llm_calls.jsonl `purpose`).
ROLES: dict[str, tuple[str, ...]] = {
    "generator": ("reward", "mutation", "crossover", "repair"),
    "judge": ("judge", "judge_score", "thought_alignment", "self_verify"),
    "summary": ("summary",),
    "critics": ("critic",),
    "setup": ("decompose", "subtask_revision", "goal_states"),
}
#: A later iteration's generation prompt adds the parent's answer and its feedback message; the feedback is counted
#: at this multiple of the answer (the offline Eureka/Hopper smoke search: a 1,387-character answer, a 2,529-character
#: feedback message).
FEEDBACK_PER_ANSWER = 1.8
#: Characters per token where no tokenizer is installed.
CHARS_PER_TOKEN = 4.0
_O200K = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


@dataclass(frozen=True)
class Calls:
    """LLM calls of one role in one search: `lo` (every candidate fails before training, no resample), `nominal`
    (every candidate trains, no resample), `hi` (every resample and re-ask used)."""

    lo: int = 0
    nominal: int = 0
    hi: int = 0

    def __add__(self, other: Calls) -> Calls:
        return Calls(self.lo + other.lo, self.nominal + other.nominal, self.hi + other.hi)

    def __mul__(self, n: int) -> Calls:
        return Calls(self.lo * n, self.nominal * n, self.hi * n)


def _schedule(cfg: BirdConfig) -> tuple[list[int], list[int]]:
    """(LLM samples, trained candidates) per iteration, with budget.max_policy_trainings applied."""
    from bird.learners.job import learner_trains
    from bird.loop import make_plan

    plan = make_plan(cfg)
    trains = learner_trains(cfg.train.learner)
    left = cfg.budget.max_policy_trainings if trains else None
    samples, trained = [], []
    for it, k in enumerate(plan.schedule, start=1):
        if left is not None:
            k = min(k, left)
        judged = it < plan.iterations or cfg.loop.feedback_on_last
        if left is not None and judged:
            left -= k
        llm = 0 if cfg.train.reward_source == "reference" else k - min(plan.n_crossover, k)
        samples.append(llm)
        trained.append(k if judged and trains else 0)
    return samples, trained


def _asks_goal_states(cfg: BirdConfig) -> bool:
    """Whether the demonstrations' positives take one goal-state call per expert episode (GRACE's P0.1):
    goal_identified always, last_if_terminal where the task's episodes do not end on success."""
    if cfg.demos.positive_states == "goal_identified":
        return True
    if cfg.demos.positive_states != "last_if_terminal":
        return False
    from bird.envs.registry import ends_on_success

    return not ends_on_success(cfg.env)


def llm_calls(cfg: BirdConfig) -> dict[str, Calls]:
    """LLM calls of one search of `cfg`, by role (ROLES)."""
    from bird import registry
    from bird.config.needs import configured, needs_judgement

    samples, trained = _schedule(cfg)
    gen_n = sum(samples)
    retries = (1 + cfg.generate.parse_retries) * (1 + cfg.generate.truncation_retries)
    n_trained = sum(trained)
    per_cand = ((cfg.judge.rollouts * cfg.judge.repeats if needs_judgement(cfg) else 0)
                + int(registry.declared("feedback_format", cfg.feedback.format).needs_judge)
                + int(cfg.feedback.thought_alignment) + int(cfg.feedback.self_verify))
    summ = cfg.feedback.summarisation
    # per subtask: decompose.n_subtasks, else the generator's choice ("about 5 for a simple task", at most 12)
    per_summary = (0, 0, 0) if summ == "none" else \
        (cfg.decompose.n_subtasks or 1, cfg.decompose.n_subtasks or 5, cfg.decompose.n_subtasks or 12) \
        if getattr(registry.get("summarisation", summ), "per_subtask", False) else (1, 1, 1)
    setup = Calls()
    if cfg.decompose.kind != "none":
        setup += Calls(1, 1, 1 + cfg.decompose.retries)
    if cfg.decompose.co_evolve:  # a revision after every iteration but the last, from its best candidate's feedback
        revisions = len(samples) - 1
        setup += Calls(0, revisions, revisions * (1 + cfg.decompose.retries))
    if cfg.demos.enabled and _asks_goal_states(cfg):
        setup += Calls(cfg.demos.n_expert, cfg.demos.n_expert, cfg.demos.n_expert)
    parts = configured(cfg)  # the declarations of every component the config names
    aligned = registry.declared("alignment", "none") not in parts  # the labeller runs only when something aligns
    critics = cfg.alignment.critics if aligned and registry.declared("segment_labeller", "critic_population_vote") in parts \
        else 0
    out = {"generator": Calls(gen_n, gen_n, gen_n * retries),
           "judge": Calls(0, n_trained * per_cand, n_trained * per_cand),
           "summary": Calls(0, n_trained * per_summary[1], n_trained * per_summary[2]),
           "critics": Calls(critics, critics, critics), "setup": setup}
    cap = cfg.budget.max_llm_calls
    if cap is not None:  # the cap counts every call; generation stops once it is reached
        out = {r: Calls(min(c.lo, cap), min(c.nominal, cap), min(c.hi, cap)) for r, c in out.items()}
    return out


# -- tokens -----------------------------------------------------------------------------------------------------
def _tokenizer() -> tuple[Callable[[str], int], str]:
    """(count, description): tiktoken's o200k_base when installed with its encoding on disk (never downloaded), else
    the CHARS_PER_TOKEN rule."""
    try:
        import tiktoken

        folder = os.environ.get("TIKTOKEN_CACHE_DIR") or os.path.join(os.environ.get("TMPDIR", "/tmp"), "data-gym-cache")
        if not Path(folder, hashlib.sha1(_O200K.encode()).hexdigest()).is_file():
            raise FileNotFoundError(folder)
        enc = tiktoken.get_encoding("o200k_base")
        return (lambda text: len(enc.encode(text, disallowed_special=()))), "tiktoken o200k_base"
    except (ImportError, OSError, ValueError):
        return (lambda text: int(round(len(text) / CHARS_PER_TOKEN))), \
            f"{CHARS_PER_TOKEN:g} characters per token (no tokenizer installed)"


_COUNT: list[tuple[Callable[[str], int], str]] = []


def count_tokens(text: str) -> int:
    """Tokens of `text` by the plan's tokenizer (see _tokenizer)."""
    if not _COUNT:
        _COUNT.append(_tokenizer())
    return _COUNT[0][0](text)


def _first_prompt(cfg: BirdConfig) -> tuple[int, int]:
    """(input tokens, output tokens) of the method's first generation call on the task: the real prompt (after the
    decomposition, when the method asks for one), answered by the offline synthesiser. Demonstrations are not loaded."""
    from bird.components.decompose import decompose
    from bird.config.schema import LLMConfig
    from bird.envs.registry import make_adapter
    from bird.llm.factory import make_generator
    from bird.loop import make_plan
    from bird.stages.generate import build_request
    from bird.state import SearchState

    offline = replace(cfg, llm=LLMConfig(), budget=replace(cfg.budget, max_llm_calls=None, max_cost_usd=None),
                      demos=replace(cfg.demos, enabled=False))
    state = SearchState(make_adapter(cfg.env).spec, make_plan(offline), cfg.seed, {})
    generator = make_generator(offline.llm, offline.budget, None)
    state.decomposition = decompose(offline, state, generator)
    state.iteration = 1
    request = build_request(offline, state, 0)
    answer = generator.complete(request)
    return sum(count_tokens(m.content) for m in request.messages), count_tokens(answer.text)


@dataclass
class CellPlan:
    """One (method, task)'s search: calls by role, tokens (nominal, hi) and env steps."""

    method: str
    env: str
    calls: dict[str, Calls]
    input_tokens: tuple[int, int]
    output_tokens: tuple[int, int]
    env_steps: int
    cells: int = 1
    notes: list[str] = field(default_factory=list)


def plan_cell(cfg: BirdConfig) -> CellPlan:
    """The plan of one search of `cfg`."""
    from bird.sweeps import planned_env_steps

    calls = llm_calls(cfg)
    first_in, first_out = _first_prompt(cfg)
    samples, _ = _schedule(cfg)
    growth = (1 + FEEDBACK_PER_ANSWER) * first_out
    turns = 0 if cfg.generate.history == "none" and cfg.generate.parent == "none" else \
        len(samples) if cfg.generate.history == "full_dialogue" else min(cfg.generate.history_turns, len(samples))
    # generation inputs: iteration 1 as rendered, later ones with up to `turns` (answer, feedback) pairs each
    gen_in = sum(n * (first_in + int(growth * min(it, turns))) for it, n in enumerate(samples))
    gen = calls["generator"]
    per_gen_in = gen_in / max(1, sum(samples))
    others = Calls(*(sum(getattr(c, f) for r, c in calls.items() if r != "generator") for f in ("lo", "nominal", "hi")))
    nominal_in = gen_in + others.nominal * first_in
    hi_in = int(per_gen_in * gen.hi) + others.hi * first_in
    max_out = cfg.generate.max_tokens
    return CellPlan(cfg.method, cfg.env.id, calls, (nominal_in, hi_in),
                    ((gen.nominal + others.nominal) * first_out, (gen.hi + others.hi) * max_out),
                    planned_env_steps(cfg))


# -- a sweep ----------------------------------------------------------------------------------------------------
def _cells(overrides: list[str], multirun: bool) -> tuple[list[list[str]], list[str]]:
    """(each cell's overrides, the shared overrides) as Hydra's basic sweeper expands `overrides` (with the
    sweep's hydra.sweeper.params under -m)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from bird.config.load import CONF_DIR, register_configs

    if not multirun:
        return [list(overrides)], list(overrides)
    shared = [o for o in overrides if "," not in o and "range(" not in o]
    register_configs()
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        cfg = hydra_compose(config_name="config", overrides=shared, return_hydra_config=True)
    params = {str(k): str(v) for k, v in (cfg.hydra.sweeper.params or {}).items()}
    parsed = OverridesParser.create().parse_overrides([f"{k}={v}" for k, v in params.items()] + overrides)
    return [cell for batch in BasicSweeper.split_arguments(parsed, None) for cell in batch], shared


def plan(overrides: list[str], multirun: bool = False) -> tuple[list[CellPlan], BirdConfig]:
    """A CellPlan per distinct (method, task) of the run or sweep (seeds counted in `cells`), and one composed config."""
    from bird.config.load import compose

    cells, shared = _cells(overrides, multirun)
    plans: dict[tuple[str, ...], CellPlan] = {}
    cfg = None
    for cell in cells:
        key = tuple(o for o in cell if not o.startswith(("seed=", "hydra.", "hydra/")))
        if key in plans:
            plans[key].cells += 1
            continue
        cfg = compose(list(key))
        plans[key] = plan_cell(cfg)
    assert cfg is not None
    return list(plans.values()), cfg


# -- the summary ------------------------------------------------------------------------------------------------
def _usd(tokens_in: int, tokens_out: int, price: Any, batch: bool = False) -> float:
    from bird.llm.prices import Usage, call_cost

    return call_cost(Usage(tokens_in, tokens_out), price, batch)


def summary(plans: list[CellPlan], cfg: BirdConfig) -> dict[str, Any]:
    """Per method and in total: cells, calls by role and in all (lo, nominal, hi), input and output tokens
    (nominal, hi), dollars (lo, nominal, hi), env steps and CPU-hours; and the price and tokenizer used."""
    from bird.llm.prices import resolve_price
    from bird.sweeps import MEASURED_STEPS_PER_S

    price = None if cfg.llm.backend == "offline" else \
        resolve_price(cfg.llm.backend, cfg.llm.model, cfg.llm.price_per_mtok)
    rows: dict[str, dict[str, Any]] = {}
    for p in plans:
        row = rows.setdefault(p.method, {"cells": 0, "roles": {r: [0, 0, 0] for r in ROLES}, "calls": [0, 0, 0],
                                         "input_tokens": [0, 0], "output_tokens": [0, 0], "usd": [0.0, 0.0, 0.0],
                                         "env_steps": 0, "cpu_h": 0.0})
        every = sum(p.calls.values(), Calls())
        batch = cfg.llm.mode == "batch"  # every call at the batch price (no prompt-cache discount is assumed)
        nominal = _usd(p.input_tokens[0], p.output_tokens[0], price, batch)
        adds = {"cells": p.cells, "calls": [every.lo, every.nominal, every.hi],
                "input_tokens": list(p.input_tokens), "output_tokens": list(p.output_tokens),
                # the low end: the low end's calls at the nominal tokens per call
                "usd": [nominal * every.lo / max(1, every.nominal), nominal,
                        _usd(p.input_tokens[1], p.output_tokens[1], price, batch)],
                "env_steps": p.env_steps,
                "cpu_h": p.env_steps / MEASURED_STEPS_PER_S.get(p.env.split("/")[0], min(MEASURED_STEPS_PER_S.values()))
                / 3600}
        for key, value in adds.items():
            n = 1 if key == "cells" else p.cells
            row[key] = [a + b * n for a, b in zip(row[key], value, strict=True)] if isinstance(value, list) \
                else row[key] + value * n
        for r, c in p.calls.items():
            row["roles"][r] = [a + b * p.cells for a, b in zip(row["roles"][r], (c.lo, c.nominal, c.hi), strict=True)]
    total: dict[str, Any] = {}
    for row in rows.values():
        for key, value in row.items():
            if key == "roles":
                roles = total.setdefault("roles", {r: [0, 0, 0] for r in ROLES})
                for r in ROLES:
                    roles[r] = [a + b for a, b in zip(roles[r], value[r], strict=True)]
            elif isinstance(value, list):
                total[key] = [a + b for a, b in zip(total.get(key, [0] * len(value)), value, strict=True)]
            else:
                total[key] = total.get(key, 0) + value
    paid = cfg.llm.backend != "offline"
    return {"llm": {"backend": cfg.llm.backend, "model": cfg.llm.model,
                    "price": None if price is None else price.to_json()},
            "warnings": [f"no price for llm={cfg.llm.backend} model={cfg.llm.model}: the dollars read 0; set "
                         "llm.price_per_mtok='{input: ..., output: ...}' or add the model to conf/llm/prices/"]
            if paid and (price is None or price.free) else [],
            "tokenizer": _COUNT[0][1] if _COUNT else "none", "methods": rows, "total": total}


def report(s: dict[str, Any]) -> list[str]:
    """The printed plan."""
    price = s["llm"]["price"]
    lines = [f"llm={s['llm']['backend']} model={s['llm']['model']}: " + (
        f"USD {price['input']:g} in / {price['output']:g} out per million tokens (dated {price.get('date', '?')}; "
        "conf/llm/prices/, or llm.price_per_mtok)" if price else "no price")]
    lines += [f"WARNING: {w}" for w in s["warnings"]]
    lines.append(f"tokens: {s['tokenizer']}. Calls, tokens and USD: nominal [low-high]; low = every candidate fails "
                 "before training, high = every resample used and every answer at max_tokens")
    lines.append(f"{'method':<10}{'cells':>6}" + "".join(f"{r:>10}" for r in ROLES) + f"{'calls':>28}"
                 + f"{'input Mtok':>16}{'output Mtok':>16}{'USD':>28}{'env steps':>12}{'CPU-h':>9}")
    for name, row in [*s["methods"].items(), ("total", s["total"])]:
        c, i, o, u = row["calls"], row["input_tokens"], row["output_tokens"], row["usd"]
        lines.append(f"{name:<10}{row['cells']:>6}" + "".join(f"{row['roles'][r][1]:>10,}" for r in ROLES)
                     + f"{f'{c[1]:,} [{c[0]:,}-{c[2]:,}]':>28}{f'{i[0] / 1e6:.2f} [-{i[1] / 1e6:.2f}]':>16}"
                     + f"{f'{o[0] / 1e6:.2f} [-{o[1] / 1e6:.2f}]':>16}{f'{u[1]:,.2f} [{u[0]:,.2f}-{u[2]:,.2f}]':>28}"
                     + f"{row['env_steps'] / 1e6:>10,.0f} M{row['cpu_h']:>9,.0f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bird.plan", description=__doc__.splitlines()[0])
    parser.add_argument("-m", "--multirun", action="store_true", help="plan the sweep these overrides launch")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    parser.add_argument("overrides", nargs="*", help="as on python -m bird's command line (e.g. +sweep=bird_gym llm=anthropic)")
    args = parser.parse_args(argv)
    from bird.config.load import ConfigError

    try:
        plans, cfg = plan(args.overrides, args.multirun)
    except ConfigError as exc:
        print(f"bird.plan: {exc}", file=sys.stderr)
        return 2
    out = summary(plans, cfg)
    print(json.dumps(out, indent=1) if args.json else "\n".join(report(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
