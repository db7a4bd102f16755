"""The answer corpus (tests/llm/answers/*.toml): answers in the shapes current models write, each with the program
that must be extracted or the failure kind that must be recorded, read by the function the generate stage uses
(bird.reward.contracts.read_answer, called from bird/stages/generate.py _fill).

A case: `answer` (the raw text), `finish_reason` (default "stop"), `max_tokens` (default 4096), `contract` (default
compute_reward), `parent` (a known program in answers/parents/, the code the prompt showed), then either `program`
(the exact program) with `check` (what the static check says of it; default: it passes), or `failure` (the kind)
with `reason` (words the failure's reason must contain); `thought`: the design thought the answer states in braces
(generate.design_thought=inline_brace)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from bird.components.thought import extract_braced
from bird.llm.base import Response
from bird.registry import get
from bird.reward.contracts import read_answer
from bird.reward.static import CONTRACT_ENTRIES, check_source
from bird.types import FailureKind

ANSWERS = Path(__file__).parent / "answers"
CASES = sorted(ANSWERS.glob("*.toml"))
_KEYS = {"about", "answer", "finish_reason", "max_tokens", "contract", "parent", "program", "check", "failure", "reason",
         "notes", "thought"}


def _case(path: Path) -> dict:
    case = tomllib.loads(path.read_text(encoding="utf-8"))
    assert set(case) <= _KEYS, f"{path.name}: unknown keys {set(case) - _KEYS}"
    assert ("program" in case) != ("failure" in case), f"{path.name}: give a program or a failure kind"
    return case


def test_the_corpus_has_at_least_thirty_answers_of_every_outcome():
    cases = [_case(p) for p in CASES]
    assert len(cases) >= 30
    kinds = {c.get("failure") for c in cases}
    assert {None, "truncated", "parse_error"} <= kinds
    assert sum("parent" in c and "program" in c for c in cases) >= 3  # quoted parents resolved to the new code


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_each_answer_gives_its_program_or_its_failure(path):
    case = _case(path)
    contract = case.get("contract", "compute_reward")
    known = [(ANSWERS / "parents" / f"{case['parent']}.py").read_text()] if "parent" in case else []
    response = Response(text=case["answer"], model="corpus", finish_reason=case.get("finish_reason", "stop"))
    reading = read_answer(get("contract", contract), response, case.get("max_tokens", 4096), known)
    if "thought" in case:
        assert extract_braced(case["answer"]) == case["thought"]
    if "failure" in case:
        assert reading.code is None  # nothing reaches compile
        assert reading.failure is not None and reading.failure.kind == FailureKind(case["failure"]), reading
        assert case.get("reason", "") in reading.failure.reason
        return
    assert reading.failure is None, reading.failure
    assert reading.code == case["program"]
    for words in case.get("notes", []):
        assert any(words in n for n in reading.notes), reading.notes
    verdict = check_source(reading.code, CONTRACT_ENTRIES[contract], contract=contract)
    if "check" in case:
        assert verdict is not None and verdict.kind == FailureKind(case["check"]), verdict
    else:
        assert verdict is None, verdict
    for parent in known:  # the quoted parent is never what is trained
        assert reading.code != parent
