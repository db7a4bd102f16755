"""The task as an ordered list of subtasks (decompose.kind=subtask_list), asked once before the first generation and,
with decompose.co_evolve, revised after each iteration from the feedback the method already shows: BIRD's RDA
(safety-research/bird@54a9ce3:configs/methods/rda.yaml generate.decomposition, update.co_evolve.subtasks;
bird/components/phases.py `run_decompose`, `run_subtask_reflection`); BIRD paper Table 5 choice (5) "co-evolve subtasks".

A subtask is {"name", "description"} and, when the generator gives one, "done_when": an observable condition that says
it is done (read by judges, including the offline one). As the release's prompt, the ask advises against numeric
thresholds the task does not state (phases.py `_decompose_prompt`: "Avoid numeric thresholds unless they are explicitly
defined in the success condition"; bird shows no success condition, so: unless the task states them). The generator
chooses how many (about 5 for a simple task, about 10 for a long one; at most MAX_SUBTASKS) unless
decompose.n_subtasks pins the count. A revision may change at most one
subtask and keeps the count; returning the list unchanged declines. The current list is SearchState.subtasks (plain
data); every revision is a line of subtasks.jsonl. An invalid answer is re-asked decompose.retries times, then the old
list is kept (recorded).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from bird.config.schema import BirdConfig
from bird.files import append_text
from bird.llm.base import Generator, LLMError, Message, Request
from bird.llm.parsing import AnswerParseError, parse_json_answer
from bird.prompts import obs_fields_context, templates
from bird.registry import get, register
from bird.state import SearchState

__all__ = ["subtask_problems", "render_subtasks", "co_evolve_subtasks"]

MAX_SUBTASKS = 12  # the release's cap on an `auto` list (bird/components/phases.py MAX_AUTO_SUBTASKS)
_KEYS = ("name", "description")  # required; "done_when" is optional
_OPTIONAL = ("done_when",)
SYSTEM = ("You are a reinforcement-learning expert who breaks robot and locomotion tasks into an ordered list of "
          "subtasks that a reward function can shape one after another. Answer with one JSON object.")
ASK = ("The environment:\n{env_repr}\n\nTask: {task}\n\nBreak the task into ordered, high-level subtasks that describe "
       "the main stages of achieving it. {count} Each subtask is a distinct, measurable phase of progress, not a "
       "perception or reasoning step (such as \"identify the goal\"), and the last one is the agent achieving the "
       "task. For each give a short name and one sentence saying what the agent must achieve; you may add "
       "`done_when`, an observable condition that says the subtask is done. Avoid numeric thresholds unless the task "
       "states them.\n"
       'Answer as JSON: {{"subtasks": [{{"name": str, "description": str, "done_when": str (optional)}}]}}')
AUTO_COUNT = "Use the fewest subtasks the task needs: about 5 for a simple task, about 10 for a complex or long-horizon one."
PINNED_COUNT = "Use exactly {n} subtasks."
REVISE = ("Task: {task}\n\nThe current subtask list:\n{subtasks}\n\nThe best reward function of the last iteration got "
          "this feedback:\n{feedback}\n\nDecide whether the list needs refining so that the next reward functions "
          "lead to natural, intended behaviour. If it does not, return the list unchanged. If it does, choose the ONE "
          "subtask that contributed most to unintended behaviour and revise it (its name, description or "
          "`done_when`, if it has one); keep the same number of subtasks and every other subtask exactly as it is. "
          "Avoid numeric thresholds unless the task states them. Say in `changes` which subtask you revised and why, "
          "or why none.\n"
          'Answer as JSON: {{"subtasks": [{{"name": str, "description": str, "done_when": str (optional)}}], '
          '"changes": str}}')


def subtask_problems(answer: Any, n_subtasks: int | None = None,
                     previous: list[dict[str, str]] | None = None) -> list[str]:
    """Every reason `answer` is not a valid {"subtasks": [...]} list (a revision of `previous`, when given). Empty =
    valid."""
    items = answer.get("subtasks") if isinstance(answer, dict) else None
    if not isinstance(items, list) or not items:
        return ["'subtasks' must be a non-empty list"]
    problems = [f"subtasks[{i}] needs non-empty strings {list(_KEYS)} (and a string {list(_OPTIONAL)} if any)"
                for i, s in enumerate(items)
                if not isinstance(s, dict) or not all(isinstance(s.get(k), str) and s[k].strip() for k in _KEYS)
                or not all(isinstance(s.get(k, ""), str | None) for k in _OPTIONAL)]
    names = [s.get("name") for s in items if isinstance(s, dict)]
    if len(set(names)) != len(names):
        problems.append(f"subtask names repeat: {names}")
    if len(items) > MAX_SUBTASKS:
        problems.append(f"{len(items)} subtasks; at most {MAX_SUBTASKS}")
    if n_subtasks is not None and len(items) != n_subtasks:
        problems.append(f"{len(items)} subtasks; decompose.n_subtasks={n_subtasks}")
    if previous is not None and not problems:
        if len(items) != len(previous):
            problems.append(f"a revision keeps the number of subtasks: {len(items)} != {len(previous)}")
        else:
            changed = [i + 1 for i, (a, b) in enumerate(zip(_clean(answer), previous, strict=True)) if a != b]
            if len(changed) > 1:
                problems.append(f"a revision changes at most one subtask; subtasks {changed} changed")
    return problems


def _clean(answer: dict[str, Any]) -> list[dict[str, str]]:
    """The subtasks as plain strings; an empty or missing `done_when` is left out."""
    return [{k: str(s[k]).strip() for k in (*_KEYS, *_OPTIONAL) if str(s.get(k) or "").strip()}
            for s in answer["subtasks"]]


def render_subtasks(subtasks: list[dict[str, str]]) -> str:
    """One numbered line per subtask (its `done_when`, when it has one, in brackets)."""
    return "\n".join(f"{i}. {s['name']}: {s['description']}" + (f" (done when: {s['done_when']})"
                                                                 if s.get("done_when") else "")
                     for i, s in enumerate(subtasks, start=1))


def _ask(cfg: BirdConfig, state: SearchState, generator: Generator, request: Request,
         previous: list[dict[str, str]] | None = None) -> tuple[list[dict] | None, list[dict]]:
    """Ask (1 + decompose.retries times) until the answer is a valid list; returns (list or None, attempts)."""
    attempts: list[dict[str, Any]] = []
    for attempt in range(cfg.decompose.retries + 1):
        req = replace(request, sample_index=request.sample_index + attempt)
        [answer] = generator.complete_many([req])
        if isinstance(answer, LLMError):
            attempts.append({"error": str(answer)[:500]})
            continue
        try:
            parsed: Any = parse_json_answer(answer.text)
            problems = subtask_problems(parsed, cfg.decompose.n_subtasks, previous)
        except AnswerParseError as exc:
            parsed, problems = None, [str(exc)]
        if problems and answer.truncated:
            problems.insert(0, f"the answer was cut off at the output limit (max_tokens={req.max_tokens})")
        attempts.append({"response": answer.text, "problems": problems, "llm": answer.to_json()})
        if not problems:
            return _clean(parsed), attempts
    return None, attempts


@register("decompose", "subtask_list")
def _subtask_list(cfg: BirdConfig, state: SearchState, generator: Generator) -> dict[str, Any]:
    """One request for the list; the record (with the prompt and every attempt) goes to decomposition.json."""
    t = templates(cfg.generate.prompt)
    count = PINNED_COUNT.format(n=cfg.decompose.n_subtasks) if cfg.decompose.n_subtasks else AUTO_COUNT
    env_repr = get("env_representation", cfg.generate.env_representation)(state.spec)
    user = t.get("subtasks_user", ASK).format(env_repr=env_repr, task=state.spec.description, count=count)
    request = Request(purpose="decompose", messages=(Message("system", t.get("subtasks_system", SYSTEM).strip()),
                                                     Message("user", user)),
                      context={"kind": "subtask_list", "task": state.spec.description,
                               "obs_fields": obs_fields_context(state.spec), "n_subtasks": cfg.decompose.n_subtasks},
                      temperature=cfg.generate.temperature, max_tokens=cfg.generate.max_tokens, seed=state.seed)
    subtasks, attempts = _ask(cfg, state, generator, request)
    state.subtasks = subtasks
    return {"kind": "subtask_list", "valid": subtasks is not None, "subtasks": subtasks,
            "prompt": request.messages_json(), "attempts": attempts}


def co_evolve_subtasks(cfg: BirdConfig, state: SearchState, generator: Generator, run_root: Path) -> dict[str, Any] | None:
    """decompose.co_evolve: after an iteration (not the last), revise the list from the feedback shown for the
    iteration's selected candidate; append the revision (or why the old list was kept) to subtasks.jsonl."""
    best = state.iteration_best
    if (not cfg.decompose.co_evolve or not state.subtasks or best not in state.reports
            or state.iteration >= state.plan.iterations):
        return None
    t = templates(cfg.generate.prompt)
    shown = state.reports[best].feedback
    user = t.get("subtasks_revise", REVISE).format(task=state.spec.description, subtasks=render_subtasks(state.subtasks),
                                                   feedback=shown)
    request = Request(purpose="subtask_revision",
                      messages=(Message("system", t.get("subtasks_system", SYSTEM).strip()), Message("user", user)),
                      context={"kind": "subtask_list", "task": state.spec.description, "subtasks": state.subtasks,
                               "feedback_text": shown, "feedback": state.reports[best].stats,
                               "obs_fields": obs_fields_context(state.spec), "n_subtasks": cfg.decompose.n_subtasks},
                      temperature=cfg.generate.temperature, max_tokens=cfg.generate.max_tokens,
                      sample_index=1000 * state.iteration, seed=state.seed)
    revised, attempts = _ask(cfg, state, generator, request, previous=state.subtasks)
    record = {"iteration": state.iteration, "from_candidate": best, "previous": state.subtasks, "revised": revised,
              "kept_previous": revised is None, "prompt": request.messages_json(), "attempts": attempts}
    if revised is not None:
        state.subtasks = revised
    append_text(run_root / "subtasks.jsonl", json.dumps(record, default=str) + "\n")
    return record
