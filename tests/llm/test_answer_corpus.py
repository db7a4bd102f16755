"""The answer corpus (tests/llm/answers/*.toml): answers in the shapes current models and servers write, each with the
program that must be trained or the failure kind that must be recorded. Every case is served by a local server
speaking the OpenAI chat-completions or the Anthropic Messages wire format, read by the real SDK through bird's
backend, and then by the function the generate stage uses (bird.reward.contracts.read_answer, called from
bird/stages/generate.py _fill). The keys of a case: tests/llm/answers/README.md."""

from __future__ import annotations

import re
import tomllib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bird.components.thought import extract_braced
from bird.llm.anthropic_backend import AnthropicBackend
from bird.llm.api_base import ApiBackend
from bird.llm.base import Message, Request
from bird.llm.openai_backend import OpenAIBackend
from bird.registry import get
from bird.reward.contracts import answer_tool, read_answer
from bird.reward.static import CONTRACT_ENTRIES, check_source
from bird.types import FailureKind

from .conftest import llm_cfg
from .fake_servers import FakeLLMServer, Reply, prompt_text

pytest.importorskip("openai")
pytest.importorskip("anthropic")

ANSWERS = Path(__file__).parent / "answers"
CASES = sorted(ANSWERS.glob("*.toml"))
WIRES = ("openai", "anthropic")
_KEYS = {"about", "class", "answer", "finish_reason", "max_tokens", "contract", "parent", "program", "check", "failure", "reason",
         "notes", "thought", "thinking", "parts", "refusal", "tool_call", "tool", "wires", "issue"}
# a stop reason in the other wire's words (a case names either)
_SAME_STOP = {"openai": {"end_turn": "stop", "max_tokens": "length", "tool_use": "tool_calls"},
              "anthropic": {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}}
_BACKENDS = {"openai": OpenAIBackend, "anthropic": AnthropicBackend}


def _case(path: Path) -> dict[str, Any]:
    case = tomllib.loads(path.read_text(encoding="utf-8"))
    assert set(case) <= _KEYS, f"{path.name}: unknown keys {set(case) - _KEYS}"
    assert case.get("class") in _documented_classes(), f"{path.name}: class {case.get('class')!r} is not in docs/llm.md"
    assert ("program" in case) != ("failure" in case), f"{path.name}: give a program or a failure kind"
    assert "answer" in case or "parts" in case or "tool_call" in case, f"{path.name}: give an answer"
    return case


def _documented_classes() -> dict[str, int]:
    """class -> count, from the corpus table of docs/llm.md ("| `class` | count | what it covers |")."""
    text = (Path(__file__).parents[2] / "docs" / "llm.md").read_text(encoding="utf-8")
    section = text.split("### The answer corpus")[1].split("###")[0]
    return {m[1]: int(m[2]) for m in re.finditer(r"^\| `(\w+)` \| (\d+) \|", section, re.M)}


def test_docs_state_the_corpus_size_and_each_class_count():
    counts = Counter(_case(p)["class"] for p in CASES)
    assert dict(counts) == _documented_classes()
    text = (Path(__file__).parents[2] / "docs" / "llm.md").read_text(encoding="utf-8")
    assert f"The corpus holds {len(CASES)} answers" in text


def _reply(case: dict[str, Any], wire: str) -> Reply:
    """The case as its wire writes it."""
    stop = case.get("finish_reason", "")
    stop = _SAME_STOP[wire].get(stop, stop)
    call = case.get("tool_call")
    return Reply(text=None if stop == "empty" else case.get("answer", ""), stop="" if stop == "empty" else stop,
                 thinking=case.get("thinking", ""), parts=case.get("parts"), refusal=case.get("refusal"),
                 tool=(call["name"], call["arguments"]) if call else None)


def _serve(wire: str):
    def answer(body: dict[str, Any]) -> Reply:
        name = prompt_text(body).split("case:")[1].split()[0]
        return _reply(_case(ANSWERS / f"{name}.toml"), wire)
    return answer


@pytest.fixture(scope="module")
def backends(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ApiBackend]]:
    """One local server and one backend per wire, for every case."""
    tmp = tmp_path_factory.mktemp("corpus")
    with FakeLLMServer("openai", _serve("openai")) as o, FakeLLMServer("anthropic", _serve("anthropic")) as a:
        yield {w: _BACKENDS[w](llm_cfg(w, srv, tmp, max_retries=0)) for w, srv in (("openai", o), ("anthropic", a))}


def test_the_corpus_holds_every_class_of_answer():
    cases = [_case(p) for p in CASES]
    assert len(cases) >= 70
    kinds = {c.get("failure") for c in cases}
    assert {None, "truncated", "parse_error", "refused", "incomplete", "ambiguous_answer"} <= kinds
    assert sum("parent" in c and "program" in c for c in cases) >= 5  # quoted parents resolved to the new code
    assert sum("parts" in c for c in cases) >= 3  # list content / content blocks
    assert sum("thinking" in c or "think>" in c.get("answer", "") or "thinking" in str(c.get("parts")) for c in cases) >= 6
    assert sum(bool(c.get("tool")) for c in cases) >= 2


_PARAMS = [pytest.param(p, w, id=f"{p.stem}-{w}") for p in CASES for w in WIRES
           if w in tomllib.loads(p.read_text(encoding="utf-8")).get("wires", WIRES)]


@pytest.mark.parametrize(("path", "wire"), _PARAMS)
def test_each_answer_trains_its_program_or_records_its_failure(path, wire, backends):
    case = _case(path)
    contract = get("contract", case.get("contract", "compute_reward"))
    tool = answer_tool(contract) if case.get("tool") else None
    known = [(ANSWERS / "parents" / f"{case['parent']}.py").read_text()] if "parent" in case else []
    max_tokens = case.get("max_tokens", 4096)
    request = Request("reward", (Message("user", f"case: {path.stem}"),), max_tokens=max_tokens, tool=tool)
    response = backends[wire].complete(request)
    reading = read_answer(contract, response, max_tokens, known, tool)
    if "thought" in case:
        assert extract_braced(case["answer"]) == case["thought"]
    if "thinking" in case:  # set aside, and kept in the record (candidate.json llm, the cache, the transcript)
        assert response.thinking == case["thinking"] and case["thinking"] not in response.text
    for words in case.get("notes", []):
        assert any(words in n for n in reading.notes), reading.notes
    if "failure" in case:
        assert reading.code is None  # nothing reaches compile
        assert reading.failure is not None and reading.failure.kind == FailureKind(case["failure"]), reading
        assert case.get("reason", "") in reading.failure.reason
        return
    assert reading.failure is None, reading.failure
    assert reading.code == case["program"]
    verdict = check_source(reading.code, CONTRACT_ENTRIES[contract.name], contract=contract.name)
    if "check" in case:
        assert verdict is not None and verdict.kind == FailureKind(case["check"]), verdict
    else:
        assert verdict is None, verdict
    for parent in known:  # the quoted parent is never what is trained
        assert reading.code != parent
