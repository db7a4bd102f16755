"""Reward-program contracts (registry family contract): the entry point a program defines and how its code is
read from an answer. `compute_reward` is bird's batch function; `reward_class` is GRACE's state-only class and
`progress_program` PRM4RL's (plan_list, Ψ, Φ); `weighted_components` BIRD's component_dict_plus_weights; the worker
adapts each to the same batch call (bird/reward/adapters.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bird.llm.base import Response
from bird.llm.parsing import AnswerParseError, parse_json_answer
from bird.registry import register
from bird.reward.extract import Extraction, extract_program
from bird.reward.static import CONTRACT_ENTRIES, PROGRESS_NAMES, WEIGHTS_NAME
from bird.types import Failure, FailureKind

__all__ = ["Contract", "Reading", "read_answer"]


@dataclass(frozen=True)
class Contract:
    name: str
    entry: str  # top-level name the program must define
    json_key: str | None = None  # answers are JSON objects with the code under this key
    required: tuple[tuple[str, ...], ...] = ()  # further top-level names (alternatives per group) the program needs

    def extract(self, text: str, known: Sequence[str] = ()) -> Extraction:
        """The program in an answer (bird/reward/extract.py); `known`: programs the prompt showed (the parent's)."""
        if self.json_key is not None:
            try:
                answer: dict[str, Any] = parse_json_answer(text)
            except AnswerParseError:
                answer = {}
            code = answer.get(self.json_key)
            if isinstance(code, str) and code.strip():
                return Extraction(code.strip() + "\n")
        return extract_program(text, self.entry, self.required, known)


@dataclass(frozen=True)
class Reading:
    """What the generate stage keeps of one answer: the program, or the failure to record; notes on how."""

    code: str | None
    failure: Failure | None
    notes: tuple[str, ...] = ()


def read_answer(contract: Contract, response: Response, max_tokens: int, known: Sequence[str] = ()) -> Reading:
    """The program of an answer, or why there is none. An answer the provider cut at its output limit is `truncated`
    and never read: half a program is never compiled."""
    if response.truncated:
        return Reading(None, Failure(FailureKind.TRUNCATED, (
            f"the answer was cut off at the output limit (max_tokens={max_tokens}; the provider's stop reason is "
            f"{response.finish_reason!r}) before it was complete; nothing of it was compiled. A shorter answer, or a "
            "higher generate.max_tokens, fits")))
    found = contract.extract(response.text, known)
    if found.code is None:
        return Reading(None, Failure(FailureKind.PARSE_ERROR, f"no {contract.name} program in the answer: {found.problem}"))
    return Reading(found.code, None, found.notes)


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
