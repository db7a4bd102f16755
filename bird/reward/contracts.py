"""Reward-program contracts (registry family contract): the entry point a program defines and how its code is
read from an answer. `compute_reward` is bird's batch function; `reward_class` is GRACE's state-only class and
`progress_program` PRM4RL's (plan_list, Ψ, Φ); `weighted_components` BIRD's component_dict_plus_weights; the worker
adapts each to the same batch call (bird/reward/adapters.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from bird.llm.base import AnswerTool, Response, stop_class
from bird.registry import register
from bird.reward.extract import Extraction, extract_program, read_source
from bird.reward.sources import python_source, shape
from bird.reward.static import CONTRACT_ENTRIES, PROGRESS_NAMES, WEIGHTS_NAME
from bird.types import Failure, FailureKind

__all__ = ["Contract", "Reading", "read_answer", "answer_tool"]

_TOOL_STOPS = frozenset({"tool_calls", "function_call", "tool_use"})


@dataclass(frozen=True)
class Contract:
    name: str
    entry: str  # top-level name the program must define
    json_key: str | None = None  # answers are JSON objects with the code under this key
    required: tuple[tuple[str, ...], ...] = ()  # further top-level names (alternatives per group) the program needs

    def extract(self, text: str, known: Sequence[str] = ()) -> Extraction:
        """The program in an answer (bird/reward/extract.py); `known`: programs the prompt showed (the parent's)."""
        return extract_program(text, self.entry, self.required, known, self.json_key)


@dataclass(frozen=True)
class Reading:
    """What the generate stage keeps of one answer: the program, or the failure to record; notes on how."""

    code: str | None
    failure: Failure | None
    notes: tuple[str, ...] = ()


def _quote(text: str, limit: int = 400) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit] + "...")


def _stopped(response: Response, max_tokens: int) -> Failure | None:
    """The failure of an answer the provider did not let end normally (docs/llm.md, "Stop reasons"); None when it
    ended as the model meant it. None of these answers is read: half a program is never compiled."""
    reason = response.finish_reason
    kind = "refused" if response.refusal else stop_class(reason)
    if kind == "truncated":
        return Failure(FailureKind.TRUNCATED, (
            f"the answer was cut off at the output limit (max_tokens={max_tokens}; the provider's stop reason is "
            f"{reason!r}) before it was complete; nothing of it was compiled. A shorter answer, or a "
            "higher generate.max_tokens, fits"))
    if kind == "refused":
        said = response.refusal or response.text
        return Failure(FailureKind.REFUSED, f"the model refused (stop reason {reason!r}); nothing of the answer was "
                                            f"compiled. It said: {_quote(said) if said.strip() else '(nothing)'}")
    if kind == "incomplete":
        if reason == "content_filter":
            why = "the provider's content filter stopped the answer"
        elif reason in _TOOL_STOPS:
            names = ", ".join(sorted({c.get("name") or "?" for c in response.tool_calls})) or "?"
            why = f"the model stopped to call a tool ({names}) that bird did not offer"
        elif reason == "pause_turn":
            why = "the provider paused the turn (a long-running server tool)"
        else:
            why = "bird does not know this stop reason"
        return Failure(FailureKind.INCOMPLETE, f"the answer is incomplete: {why} (the provider's stop reason is "
                                               f"{reason!r}); nothing of it was compiled")
    return None


def _tool_reading(contract: Contract, response: Response, tool: AnswerTool) -> Reading:
    """The program as the argument of the answer tool's call: no text is parsed."""
    calls = [c for c in response.tool_calls if c.get("name") == tool.name]
    if not calls:
        seen = ", ".join(repr(c.get("name")) for c in response.tool_calls) or "none"
        return Reading(None, Failure(FailureKind.PARSE_ERROR, f"no call of the tool {tool.name!r} in the answer "
                                                              f"(tool calls: {seen}); the text is not read"))
    programs = []
    for i, call in enumerate(calls, 1):
        args = call.get("arguments")
        try:
            args = json.loads(args) if isinstance(args, str) else args
        except ValueError as exc:
            return Reading(None, Failure(FailureKind.PARSE_ERROR, f"the arguments of call {i} of {tool.name!r} are "
                                                                  f"not JSON ({exc})"))
        code = args.get(tool.argument) if isinstance(args, dict) else None
        if not isinstance(code, str) or not code.strip():
            return Reading(None, Failure(FailureKind.PARSE_ERROR, f"call {i} of {tool.name!r} has no string "
                                                                  f"argument {tool.argument!r}"))
        programs.append(python_source(f"call {i} of {tool.name}", code))
    if len({shape(p.tree) if p.tree else p.text for p in programs}) > 1:
        return Reading(None, Failure(FailureKind.AMBIGUOUS_ANSWER, f"the answer calls {tool.name!r} {len(calls)} "
                                                                   "times with different programs; bird does not guess which one is meant"))
    code, problem = read_source(programs[-1], contract.entry, contract.required)
    notes = tuple(n for p in programs for n in p.notes) + (f"the program is the argument {tool.argument!r} of "
                                                             f"{programs[-1].label}",)
    if code is None:
        return Reading(None, Failure(FailureKind.PARSE_ERROR, f"no {contract.name} program in the tool call: {problem}"))
    return Reading(code, None, notes)


def answer_tool(contract: Contract) -> AnswerTool:
    """The tool a model is made to call with its program (generate.answer_form=tool): one string argument `code`."""
    return AnswerTool("submit_reward_program",
                      f"Submit your answer: the complete reward program, Python source defining {contract.entry}.",
                      "code", f"the complete Python program, with its imports and helpers, defining {contract.entry}")


def read_answer(contract: Contract, response: Response, max_tokens: int, known: Sequence[str] = (),
                tool: AnswerTool | None = None) -> Reading:
    """The program of an answer, or why there is none (docs/llm.md, "What bird does with an answer").

    An answer the provider cut, filtered or paused, or the model refused, is never read. With `tool` (the request
    asked for the program as that tool's call) the call's argument is the program and no text is parsed."""
    beside = list(response.set_aside) + ([f"thinking set aside: {len(response.thinking)} characters the provider "
                                          "marked as thinking"] if response.thinking else [])
    tool_stop = tool is not None and response.finish_reason in _TOOL_STOPS and not response.refusal
    failure = None if tool_stop else _stopped(response, max_tokens)
    if failure is not None:
        return Reading(None, failure, tuple(beside))
    if tool is not None:
        reading = _tool_reading(contract, response, tool)
        return Reading(reading.code, reading.failure, (*beside, *reading.notes))
    found = contract.extract(response.text, known)
    notes = (*beside, *found.notes)
    if found.ambiguous:
        return Reading(None, Failure(FailureKind.AMBIGUOUS_ANSWER, found.problem), notes)
    if found.code is None:
        return Reading(None, Failure(FailureKind.PARSE_ERROR, f"no {contract.name} program in the answer: {found.problem}"),
                       notes)
    return Reading(found.code, None, notes)


for _name, _contract in {
    "compute_reward": Contract("compute_reward", CONTRACT_ENTRIES["compute_reward"]),
    "reward_class": Contract("reward_class", CONTRACT_ENTRIES["reward_class"], json_key="reward_class_code"),
    # PRM4RL §4.1–4.2: plan_list, Ψ = determine_subtask(obs) -> int, Φ = progress(obs) -> float (worker _ProgressAdapter)
    "progress_program": Contract("progress_program", CONTRACT_ENTRIES["progress_program"],
                                 required=((PROGRESS_NAMES[1],), (PROGRESS_NAMES[0], PROGRESS_NAMES[0].upper()))),
    # BIRD's component_dict_plus_weights (safety-research/bird@54a9ce3:configs/methods/rda.yaml
    # generate.output.format): a dict of components and REWARD_WEIGHTS; the worker applies the weights (bird/reward/adapters.py _WeightedAdapter)
    "weighted_components": Contract("weighted_components", CONTRACT_ENTRIES["weighted_components"],
                                    required=((WEIGHTS_NAME,),)),
}.items():
    register("contract", _name)(_contract)
