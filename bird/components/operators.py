"""Sample plans and LLM operators: how each of an iteration's samples is made (registry family sampling) and the
prompts of the operators that build on one or more earlier rewards (registry family operator).

A plan says, per sample, which operator writes it and from which parents. `sample` is the method's own prompt
(its initial message and history, bird/stages/generate.py); every other operator renders one self-contained
user message from its template in the method's template set, showing the parents' code and feedback."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from bird.components.context import initial_user_message
from bird.components.thought import DEFAULT_PARENT, current_thought, thought_prompt
from bird.config.schema import BirdConfig
from bird.llm.base import Message, Request
from bird.prompts import obs_fields_context, system_template, templates
from bird.registry import declared, get, register
from bird.state import SearchState

__all__ = ["SamplePlan", "Operator", "operator_request", "draw_mate", "render_reward"]


@dataclass(frozen=True)
class SamplePlan:
    """How one sample is made: the operator and its parents (first = parent_id, the rest = co_parents)."""

    operator: str = "sample"
    parents: tuple[str, ...] = ()


@dataclass(frozen=True)
class Operator:
    """An LLM operator: the template (file stem in the method's template set) it renders and its request purpose."""

    template: str
    purpose: str
    n_parents: int = 1
    shows_path: bool = False  # the parent's root → leaf path (tree.path_window nodes) fills {path}


for _name, _op in {
    # REvolve's evolutionary operators
    "mutation": Operator("mutation_user", "mutation"),
    "crossover": Operator("crossover_user", "crossover", n_parents=2),
    # RF-Agent's tree actions (every expansion prompt shows the path to the expanded node)
    "mutation_mechanism": Operator("action_mutation_mechanism", "mutation", shows_path=True),
    "mutation_param": Operator("action_mutation_param", "mutation", shows_path=True),
    "crossover_elite": Operator("action_crossover_elite", "crossover", n_parents=2, shows_path=True),
    "path_reasoning": Operator("action_path_reasoning", "mutation", shows_path=True),
    "different_thought": Operator("action_different_thought", "reward", shows_path=True),
}.items():
    register("operator", _name)(_op)


def _rng(state: SearchState, salt: str) -> random.Random:
    import hashlib

    digest = hashlib.sha256(f"{state.seed}/{state.iteration}/{salt}".encode()).hexdigest()
    return random.Random(int(digest[:16], 16))


def draw_mate(cfg: BirdConfig, state: SearchState, parent_rule: str, first: str, rng: random.Random,
              temperature: float) -> str | None:
    """A second parent other than `first`: the parent rule's own `mate` when it has one (an island cohort draws
    from the first parent's island), else repeated draws of the rule [ours: up to 8]."""
    fn = get("parent", parent_rule)
    mate = declared("parent", parent_rule).mate
    if mate is not None:
        return mate(cfg, state, first, rng, temperature)
    for _ in range(8):
        other = fn(cfg, state, rng, temperature)
        if other is not None and other != first:
            return other
    return None


# -- sampling: the plan of one iteration's K samples ----------------------------------------------------------
@register("sampling", "iid")
def _iid(cfg: BirdConfig, state: SearchState, k: int) -> list[SamplePlan]:
    """K independent samples of the method's prompt (Eureka)."""
    return [SamplePlan() for _ in range(k)]


@register("sampling", "evolutionary_operators")
def _evolutionary(cfg: BirdConfig, state: SearchState, k: int) -> list[SamplePlan]:
    """Each sample is a crossover of two parents with probability generate.crossover_rate, else a mutation of one
    (parents from generate.parent); a fresh sample while no parent can be drawn (REvolve)."""
    plans = []
    for i in range(k):
        rng = _rng(state, f"operator/{i}")
        first = get("parent", cfg.generate.parent)(cfg, state, rng, cfg.generate.parent_temperature)
        if first is None:
            plans.append(SamplePlan())
            continue
        mate = None
        if rng.random() < cfg.generate.crossover_rate:
            mate = draw_mate(cfg, state, cfg.generate.parent, first, rng, cfg.generate.parent_temperature)
        plans.append(SamplePlan("crossover", (first, mate)) if mate else SamplePlan("mutation", (first,)))
    return plans


# -- operator prompts ----------------------------------------------------------------------------------------
def render_reward(cfg: BirdConfig, state: SearchState, cid: str, title: str) -> str:
    """One earlier reward as a prompt block: its code, its design thought (generate.parent_thought) and the feedback
    its training produced."""
    report = state.reports.get(cid)
    feedback = report.feedback if report is not None else "(no training feedback: the reward failed)"
    thought = current_thought(state, cid) if cfg.generate.parent_thought else None
    idea = "\n" + DEFAULT_PARENT.replace("{thought}", thought) if thought else ""
    return f"{title}:\n```python\n{state.candidates[cid].code or ''}```{idea}\n{feedback}"


def _shown(cfg: BirdConfig, state: SearchState, cid: str) -> dict[str, Any]:
    report = state.reports.get(cid)
    out = {"id": cid, "code": state.candidates[cid].code, "feedback": report.stats if report else None}
    thought = current_thought(state, cid) if cfg.generate.parent_thought else None
    return {**out, "thought": thought} if thought else out


def _path(cfg: BirdConfig, state: SearchState, leaf: str) -> list[str]:
    """The last tree.path_window nodes of the root → leaf path, oldest first (leaf included)."""
    chain: list[str] = []
    node: str | None = leaf
    while node is not None and len(chain) < cfg.tree.path_window:
        chain.append(node)
        node = state.candidates[node].parent_id
    return chain[::-1]


def operator_request(cfg: BirdConfig, state: SearchState, sample_index: int, plan: SamplePlan) -> Request:
    """The request of one operator sample: system message + one user message (its template), and a context that
    carries exactly what the message shows (the parents' code and feedback statistics, the path)."""
    op: Operator = get("operator", plan.operator)
    t = templates(cfg.generate.prompt)
    if op.template not in t:
        raise ValueError(f"operator {plan.operator!r} needs the template {op.template}.txt in "
                         f"methods/{cfg.generate.prompt}/")
    parents = [p for p in plan.parents if p is not None]
    titles = ["Reward function A", "Reward function B"] if len(parents) > 1 else ["The current reward function"]
    extra = {"parents": "\n\n".join(render_reward(cfg, state, p, titles[i]) for i, p in enumerate(parents)),
             "code_output_tip": t.get("code_output_tip", ""), "code_feedback": t.get("code_feedback", "")}
    context: dict[str, Any] = {
        "obs_fields": obs_fields_context(state.spec, cfg.generate.field_view), "action_dim": state.spec.action_dim,
        "iteration": state.iteration, "contract": cfg.reward.contract, "operator": plan.operator,
        "parents": [_shown(cfg, state, p) for p in parents],
    }
    if parents:
        context.update(parent_code=state.candidates[parents[0]].code, feedback=context["parents"][0]["feedback"])
    if op.shows_path and parents:
        path = _path(cfg, state, parents[0])
        extra["path"] = "\n\n".join(render_reward(cfg, state, p, f"Node {k + 1} of {len(path)} on the path (root "
                                                                 "side first)") for k, p in enumerate(path))
        context["path"] = [_shown(cfg, state, p) for p in path]
    user, shown = initial_user_message(cfg.generate.prompt, cfg.generate.env_representation, state,
                                       cfg.generate.field_view, name=op.template, extra=extra)
    context.update(shown)
    tip, asked = thought_prompt(cfg, state, None)  # the parents' thoughts are in their blocks; only the instruction
    user = "\n\n".join([user.rstrip(), *tip]) if tip else user
    context.update(asked)
    system = system_template(t, state.spec.suite).format(signature=t.get("signature", ""), code_output_tip=t.get("code_output_tip", ""),
                                action_dim=state.spec.action_dim)
    return Request(purpose=op.purpose, messages=(Message("system", system), Message("user", user)), context=context,
                   temperature=cfg.generate.temperature, max_tokens=cfg.generate.max_tokens,
                   sample_index=sample_index, seed=state.seed)
