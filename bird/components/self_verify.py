"""Self-verification (RF-Agent): after training, the generator rates each of its trained rewards in [-1, 1] from the
reward's code and the feedback it produced; the rating is kept in SearchState.self_verify (and self_verify.json) and
the search tree uses it in its node values. A rating that cannot be read is recorded as None (no effect). No later
prompt shows it."""

from __future__ import annotations

import re
from typing import Any

from bird.config.roles import judge_temperature
from bird.config.schema import BirdConfig
from bird.llm.base import LLMError, Message, Request
from bird.prompts import templates
from bird.state import SearchState
from bird.types import Candidate, Report

__all__ = ["self_verify", "parse_rating"]

_DEFAULT = ("Here is a reward function you wrote and the feedback from training a policy with it.\n"
            "```python\n{code}```\n{feedback}\n\nRate how well this reward will lead a policy to accomplish the task, "
            "from -1 (not at all) to 1 (fully). End your answer with a line 'Rating: <number>'.")
# "Rating: 0.8", "**Rating:** -0.5", "Final rating = **+.7**", "rating: [0.3]", "Rating (-1 to 1): 0.6"
_RATING = re.compile(r"rating(?:\s*\([^)\n]{0,40}\))?[\s*_`]{0,4}[:=][\s*_`\[(]{0,6}([-+]?\d*\.?\d+)", re.IGNORECASE)


def parse_rating(text: str) -> float | None:
    """The last 'Rating: x' of an answer, clipped to [-1, 1]; None when there is none."""
    found = _RATING.findall(text)
    if not found:
        return None
    return max(-1.0, min(1.0, float(found[-1])))


def _request(cfg: BirdConfig, state: SearchState, cand: Candidate, report: Report) -> Request:
    t = templates(cfg.generate.prompt)
    user = t.get("self_verify_user", _DEFAULT).format(code=cand.code, feedback=report.feedback,
                                                      task=state.spec.description)
    context: dict[str, Any] = {"code": cand.code, "feedback": report.stats, "task": state.spec.description}
    return Request("self_verify", (Message("user", user),), context, temperature=judge_temperature(cfg), max_tokens=1024,
                   sample_index=cand.index, seed=state.seed)


def self_verify(cfg: BirdConfig, state: SearchState, cands: list[Candidate], reports: dict[str, Report]) -> None:
    """Rate every reported candidate (state.self_verify[id] = rating), with the judge role's generator
    (which inherits the generator's backend and model unless judge.* says otherwise)."""
    rated = [c for c in cands if c.id in reports and c.code]
    if not rated or state.judge is None:
        return
    requests = [_request(cfg, state, c, reports[c.id]) for c in rated]
    answers = state.judge.complete_many(requests)
    for cand, req, answer in zip(rated, requests, answers, strict=True):
        text = f"(llm_error: {answer})" if isinstance(answer, LLMError) else answer.text
        state.self_verify[cand.id] = parse_rating(text)
        state.records.setdefault(cand.id, {})["self_verify.json"] = {"rating": state.self_verify[cand.id],
                                                                     "answer": text[-2000:],
                                                                     "prompt": req.messages_json()}
