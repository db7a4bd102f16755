"""What a generation prompt shows beyond the method's own template: context blocks appended to the last user message
(the subtask list, the judge's behavioural analysis of the parent, the parent's design thought, the design-thought
instruction), and the `replace` prompt mode (registry family prompt_mode).

- Subtasks: whenever the search has a subtask list (decompose.kind=subtask_list), as RDA's `include_task_decomposition`.
- Behavioural analysis (generate.behavioural_analysis; BIRD choice (2), RDA's `include_behavioural_analysis`): the
  judge's per-subtask account of what the parent's policy did.
- prompt_mode=replace (RDA's `prompt.mode: replace`, BIRD paper Table 9 "rebuilt, 4 turns"): one user message,
  rebuilt every iteration from the search state: the task, then the last generate.history_turns rewards of the parent's
  lineage with their feedback (the parent last), then the instruction to improve. `dialogue` (Eureka, CARD, RE-GoT)
  keeps earlier turns as assistant/user messages.
Every block returns its text and the context entries of exactly that text.
"""

from __future__ import annotations

from typing import Any

from bird import registry
from bird.components.decompose import render_graph
from bird.components.demo_views import shown_expert_trajectories
from bird.components.subtasks import render_subtasks
from bird.components.thought import thought_prompt
from bird.config.schema import BirdConfig
from bird.envs.base import TaskSpec
from bird.llm.base import Message
from bird.prompts import IMPORT_INSTRUCTIONS, render_fields, templates
from bird.registry import register
from bird.state import SearchState

__all__ = ["context_blocks", "initial_user_message"]

SUBTASKS = "The task's subtasks, in order:\n{subtasks}"
BEHAVIOUR = "How the policy trained with the reward above behaved, per subtask (a judge's account of its rollouts):\n{lines}"
TURN = "Reward function {n} of {total}{note}:\n```python\n{code}```\nFeedback on it:\n{feedback}"
IMPROVE = "Write a new reward function that improves on the last one above."


def _behaviour(state: SearchState, parent: str | None) -> tuple[str | None, dict[str, Any]]:
    judgement = state.judgements.get(parent or "")
    if not judgement or not judgement.get("subtasks"):
        return None, {}
    rows, lines = [], []
    for i, sub in enumerate(judgement["subtasks"], start=1):
        seen = list(dict.fromkeys(j["behaviour"] for j in sub["judgements"] if j["behaviour"]))
        rows.append({"name": sub["name"], "behaviour": seen})
        lines.append(f"{i}. {sub['name']}: {' / '.join(seen) or '(no account)'}")
    return BEHAVIOUR.format(lines="\n".join(lines)), {"behavioural_analysis": rows}


def context_blocks(cfg: BirdConfig, state: SearchState, parent: str | None) -> tuple[list[str], dict[str, Any]]:
    """Text pieces for the end of the last user message, and their context entries."""
    t = templates(cfg.generate.prompt)
    pieces: list[str] = []
    context: dict[str, Any] = {}
    if state.subtasks:
        pieces.append(t.get("subtasks_block", SUBTASKS).strip().replace("{subtasks}", render_subtasks(state.subtasks)))
        context["subtasks"] = state.subtasks
    if cfg.generate.behavioural_analysis:
        text, shown = _behaviour(state, parent)
        if text:
            pieces.append(text)
            context.update(shown)
    more, shown = thought_prompt(cfg, state, parent)
    return pieces + more, {**context, **shown}


@register("prompt_mode", "replace")
def _replace(cfg: BirdConfig, state: SearchState, system: str, first: str, chain: list[str]) -> list[Message]:
    """One user message: the first prompt, then each turn of the chain as code + feedback, then the instruction."""
    if not chain:
        return [Message("system", system), Message("user", first)]
    t = templates(cfg.generate.prompt)
    turn = t.get("replace_turn", TURN)
    blocks = [first.rstrip()]
    for n, cid in enumerate(chain, start=1):
        note = " (the current parent)" if n == len(chain) else ""
        blocks.append(turn.strip().format(n=n, total=len(chain), note=note, code=state.candidates[cid].code or "",
                                          feedback=state.reports[cid].feedback))
    blocks.append(t.get("replace_instruction", IMPROVE).strip())
    return [Message("system", system), Message("user", "\n\n".join(blocks))]


def initial_user_message(template_set: str, representation: str, state: SearchState, field_view: str = "described",
                         rng: Any = None, name: str = "initial_user",
                         extra: dict[str, str] | None = None) -> tuple[str, dict[str, Any]]:
    """The first user message (or the template `name` with the same slots) and the structured context of what it
    shows (slots the template does not use are neither rendered nor put in the context). Demonstrations fill
    {expert_trajectories} when the search has them (a random subset drawn with `rng`); `extra` fills the caller's
    own slots."""
    t = templates(template_set)[name]
    spec: TaskSpec = state.spec
    slots: dict[str, Any] = {
        "env_repr": lambda: registry.get("env_representation", representation)(spec),
        "obs_index": lambda: render_fields(spec, field_view),
        "state_description": lambda: render_fields(spec, field_view),
        "action_dim": lambda: spec.action_dim,
        "action_low": lambda: min(spec.action_low),
        "action_high": lambda: max(spec.action_high),
        "task": lambda: spec.description,
        "import_instructions": lambda: IMPORT_INSTRUCTIONS,
    }
    values = {k: f() for k, f in slots.items() if "{" + k + "}" in t}
    context: dict[str, Any] = {"task": spec.description} if "task" in values else {}
    if "{task_graph}" in t:  # the decomposition's graph, when there is a valid one (else the slot stays empty)
        graph = (getattr(state, "decomposition", None) or {}).get("graph")
        values["task_graph"] = "\n" + render_graph(graph) + "\n" if graph else ""
        if graph:
            context["task_graph"] = graph
    if "{expert_trajectories}" in t:
        values["expert_trajectories"], context["expert_trajectories"] = shown_expert_trajectories(state, rng)
    return t.format(**values, **(extra or {})), context
