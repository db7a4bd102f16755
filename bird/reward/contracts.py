"""Reward-program contracts (registry family contract): the entry point a program defines and how its code is
read from an answer. `compute_reward` is bird's batch function; `reward_class` is GRACE's state-only class and
`progress_program` PRM4RL's (plan_list, Ψ, Φ); `weighted_components` BIRD's component_dict_plus_weights; the worker
adapts each to the same batch call (bird/reward/adapters.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bird.llm.parsing import AnswerParseError, parse_json_answer
from bird.registry import register
from bird.reward.extract import extract_code
from bird.reward.static import CONTRACT_ENTRIES

__all__ = ["Contract"]


@dataclass(frozen=True)
class Contract:
    name: str
    entry: str  # top-level name the program must define
    json_key: str | None = None  # answers are JSON objects with the code under this key

    def extract(self, text: str) -> str | None:
        """The program in an answer, or None when there is none."""
        if self.json_key is not None:
            try:
                answer: dict[str, Any] = parse_json_answer(text)
            except AnswerParseError:
                answer = {}
            code = answer.get(self.json_key)
            if isinstance(code, str) and code.strip():
                return code.strip() + "\n"
        code = extract_code(text, self.entry)
        if code is not None and self.json_key is not None and f"class {self.entry}" not in code:
            return None
        return code


for _name, _contract in {
    "compute_reward": Contract("compute_reward", CONTRACT_ENTRIES["compute_reward"]),
    "reward_class": Contract("reward_class", CONTRACT_ENTRIES["reward_class"], json_key="reward_class_code"),
    # PRM4RL §4.1–4.2: plan_list, Ψ = determine_subtask(obs) -> int, Φ = progress(obs) -> float (worker _ProgressAdapter)
    "progress_program": Contract("progress_program", CONTRACT_ENTRIES["progress_program"]),
    # BIRD's component_dict_plus_weights (bird_release.md §1.5 generate.output.format; RDA §2.2): a dict of
    # components and REWARD_WEIGHTS; the worker applies the weights (bird/reward/adapters.py _WeightedAdapter)
    "weighted_components": Contract("weighted_components", CONTRACT_ENTRIES["weighted_components"]),
}.items():
    register("contract", _name)(_contract)
