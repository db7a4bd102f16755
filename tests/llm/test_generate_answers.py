"""The generate stage against a local OpenAI-compatible server (the real openai SDK, the real wire format): a cut
answer is recorded as `truncated`, re-asked once with a note and generate.truncation_max_tokens, its cost counted;
an answer that quotes the parent's code before the new code yields the new code."""

from __future__ import annotations

import copy
import threading
from typing import Any

import pytest

from bird.envs.registry import make_adapter
from bird.llm.blocks import fenced_blocks
from bird.llm.factory import make_generator
from bird.llm.offline import OfflineSynthesiser
from bird.stages.feedback import feedback
from bird.stages.generate import build_request, generate
from bird.state import Plan, SearchState
from bird.types import Candidate, Checkpoint, FailureKind, TrainResult

from .fake_servers import FakeLLMServer, Reply, prompt_text

pytest.importorskip("openai")

NEW = """import numpy as np


def compute_reward(obs, action, next_obs, info):
    forward = 3.0 * next_obs["rootx_vel"]
    return forward, {"forward": forward}
"""
CUT = "Here is my reward.\n\n```python\nimport numpy as np\n\n\ndef compute_reward(obs, action, next_obs, info):\n    fo"


class Script:
    """Answers by arrival order; records each request's max_tokens and whether it carries the truncation note."""

    def __init__(self, replies: list[Any]) -> None:
        self.replies, self.seen, self.lock = list(replies), [], threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Any:
        with self.lock:
            self.seen.append({"max_tokens": body.get("max_tokens"), "note": "was cut off" in prompt_text(body),
                              "text": prompt_text(body)})
            reply = self.replies.pop(0)
        return reply(body) if callable(reply) else reply


def _parent_code(body: dict[str, Any]) -> str:
    """The code of the last assistant turn of a request (the parent's answer)."""
    parent = [m["content"] for m in body["messages"] if m["role"] == "assistant"][-1]
    return [b.text for b in fenced_blocks(parent) if "def compute_reward" in b.text][-1]


def quote_parent_first(body: dict[str, Any]) -> str:
    return f"Your current reward function:\n\n```python\n{_parent_code(body)}\n```\n\nAn improved one:\n\n```python\n{NEW}```\n"


def quote_parent_after(body: dict[str, Any]) -> str:
    """The new code, then the parent's quoted 'for comparison': the last block is the parent's."""
    return f"```python\n{NEW}```\n\nFor comparison, the previous version:\n\n```python\n{_parent_code(body)}\n```\n"


def _state(cfg) -> SearchState:
    """Iteration 2 of a Eureka search: two offline programs of iteration 1, trained (hand-made curves), reported."""
    adapter = make_adapter(cfg.env)
    state = SearchState(adapter.spec, Plan(2, 2, 10, 10, 1, 1), 0, {})
    state.iteration = 1
    offline = OfflineSynthesiser("bird-offline-synth-v1")
    for i in range(2):
        req = build_request(cfg, state, i)
        text = offline.complete(req).text
        code = text.split("```python\n")[1].split("```")[0]
        state.candidates[f"it1-c{i}"] = Candidate(f"it1-c{i}", 1, i, req.messages_json(), response=text, code=code)
    results = {c: TrainResult(c, 0, tuple(Checkpoint(1000 * k, 0.1 * k + i, 0.0, 5.0, 1.0, 10.0, {}) for k in (1, 2)),
                              2000, 1.0) for i, c in enumerate(state.candidates)}
    state.results.update(results)
    state.reports.update(feedback(cfg, state, list(state.candidates.values()), results))
    state.iteration_best = state.global_best = "it1-c1"
    state.iteration = 2
    return state


BASE = ("method=eureka", "env=mujoco/hopper", "generate.n_candidates=2")


@pytest.fixture(scope="module")
def iteration_two(compose_cfg) -> SearchState:
    return _state(compose_cfg(*BASE))


def _run(compose_cfg, iteration_two, tmp_path, replies: list[Any], *overrides: str
         ) -> tuple[list[Candidate], Script, SearchState, Any]:
    script = Script(replies)
    state = copy.deepcopy(iteration_two)
    with FakeLLMServer("openai", script) as srv:
        cfg = compose_cfg(*BASE, "llm=openai", f"llm.base_url={srv.base_url}", "llm.model=any", "llm.cache=off",
                          "llm.max_concurrency=1", "llm.price_per_mtok={input: 1.0, output: 2.0}", *overrides)
        gen = make_generator(cfg.llm, cfg.budget, tmp_path / "llm_calls.jsonl")
        cands = generate(cfg, state, gen)
    return cands, script, state, gen


def test_a_cut_answer_is_truncated_then_reasked_once_with_a_note_and_more_tokens(compose_cfg, iteration_two, tmp_path):
    cands, script, _, gen = _run(compose_cfg, iteration_two, tmp_path, [(CUT, "length"), f"```python\n{NEW}```", f"```python\n{NEW}```"],
                                 "generate.truncation_max_tokens=8192")
    first, second = cands
    assert first.code == NEW and first.failure is None and first.attempts == 2
    [cut] = first.resampled
    assert cut["kind"] == "truncated" and "max_tokens=4096" in cut["reason"] and cut["cost_usd"] > 0
    assert second.attempts == 1 and not second.resampled
    assert [(s["max_tokens"], s["note"]) for s in script.seen] == [(4096, False), (4096, False), (8192, True)]
    assert "4096 tokens" in script.seen[2]["text"]
    assert gen.totals()["calls"] == 3  # the cut answer's call is counted, and its cost
    assert gen.totals()["cost_usd"] == pytest.approx(sum(c.llm["cost_usd"] for c in cands) + cut["cost_usd"])


def test_an_answer_cut_twice_is_recorded_truncated_and_never_compiled(compose_cfg, iteration_two, tmp_path):
    cands, script, _, _ = _run(compose_cfg, iteration_two, tmp_path, [(CUT, "length"), f"```python\n{NEW}```", (CUT, "length")])
    cut = cands[0]
    assert cut.code is None and cut.failure.kind == FailureKind.TRUNCATED and cut.attempts == 2
    assert "max_tokens=4096" in cut.failure.reason and "nothing of it was compiled" in cut.failure.reason
    assert len(script.seen) == 3


def test_truncation_retries_zero_records_the_cut_answer_without_asking_again(compose_cfg, iteration_two, tmp_path):
    cands, script, _, _ = _run(compose_cfg, iteration_two, tmp_path, [(CUT, "length"), f"```python\n{NEW}```"],
                               "generate.truncation_retries=0")
    assert cands[0].failure.kind == FailureKind.TRUNCATED and cands[0].attempts == 1 and len(script.seen) == 2


def test_an_answer_quoting_the_parent_before_or_after_yields_the_new_code(compose_cfg, iteration_two, tmp_path):
    cands, script, state, _ = _run(compose_cfg, iteration_two, tmp_path, [quote_parent_first, quote_parent_after])
    parent = state.candidates["it1-c1"].code
    for cand in cands:
        assert cand.parent_id == "it1-c1" and parent in script.seen[0]["text"]  # the prompt showed the parent
        assert cand.code == NEW and cand.failure is None
        assert any("repeats a program the prompt showed" in n for n in cand.llm["extraction"])


BAD = "import os\n\n\ndef compute_reward(obs, action, next_obs, info):\n    return next_obs['rootx_vel'], {}\n"


def test_a_repair_that_quotes_the_failed_code_after_the_fix_yields_the_fix(compose_cfg, iteration_two, tmp_path):
    def fix_then_quote(body: dict[str, Any]) -> str:
        assert "would give access to processes" in prompt_text(body)  # the repair shows the static check's reason
        return f"```python\n{NEW}```\n\nThe failing version, for reference:\n\n```python\n{BAD}```\n"

    cands, script, _, _ = _run(compose_cfg, iteration_two, tmp_path, [f"```python\n{BAD}```", f"```python\n{NEW}```", fix_then_quote],
                               "generate.repair=with_trace", "generate.parse_retries=1", "generate.resample_on=[rejected]",
                               "verify.checks=[static]")
    assert cands[0].code == NEW and cands[0].attempts == 2 and cands[0].resampled[0]["kind"] == "rejected"
    assert len(script.seen) == 3


def test_list_content_with_a_thinking_part_gives_the_text_part_program(compose_cfg, iteration_two, tmp_path):
    """An OpenAI-compatible server's content as a list of parts (thinking, then text) once ended the search with an
    AttributeError; the thinking part is set aside and kept in the record."""
    parts = [{"type": "thinking", "thinking": "draft:\n```python\ndef compute_reward(o, a, n, i):\n    return 0.0, {}\n```"},
             {"type": "text", "text": f"```python\n{NEW}```"}]
    cands, _, _, _ = _run(compose_cfg, iteration_two, tmp_path, [Reply(parts=parts), f"```python\n{NEW}```"])
    assert cands[0].code == NEW and cands[0].failure is None
    assert "draft" in cands[0].llm["thinking"] and "draft" not in cands[0].response


def test_an_answer_stopped_by_the_content_filter_is_incomplete_and_reasked_once_with_a_note(compose_cfg, iteration_two,
                                                                                        tmp_path):
    filtered = Reply(f"```python\n{BAD}```\nand then", stop="content_filter")
    cands, script, _, _ = _run(compose_cfg, iteration_two, tmp_path, [filtered, f"```python\n{NEW}```", f"```python\n{NEW}```"])
    assert cands[0].code == NEW and cands[0].attempts == 2 and cands[0].resampled[0]["kind"] == "incomplete"
    assert "content filter" in cands[0].resampled[0]["reason"]
    assert [s["max_tokens"] for s in script.seen] == [4096, 4096, 4096]
    assert "stopped before it was complete" in script.seen[2]["text"]


def test_a_refusal_is_recorded_with_its_text_and_not_reasked(compose_cfg, iteration_two, tmp_path):
    refusal = Reply("", refusal="I can't help with that request.")
    cands, script, _, _ = _run(compose_cfg, iteration_two, tmp_path, [refusal, f"```python\n{NEW}```"])
    assert cands[0].code is None and cands[0].failure.kind == FailureKind.REFUSED and cands[0].attempts == 1
    assert "I can't help with that request." in cands[0].failure.reason
    assert cands[0].llm["refusal"] == "I can't help with that request." and len(script.seen) == 2


OPTIONS = (f"Option A:\n\n```python\n{NEW}```\n\nOption B:\n\n```python\n"
           "def compute_reward(obs, action, next_obs, info):\n    return next_obs['rootz_pos'], {}\n```\n")


@pytest.mark.parametrize("repair", ["blind", "with_trace"])
def test_an_ambiguous_answer_is_reasked_once_through_the_repair_family_with_a_note_naming_its_programs(
        compose_cfg, iteration_two, tmp_path, repair):
    cands, script, _, _ = _run(compose_cfg, iteration_two, tmp_path, [OPTIONS, f"```python\n{NEW}```", f"```python\n{NEW}```"],
                               f"generate.repair={repair}")
    assert cands[0].code == NEW and cands[0].attempts == 2 and cands[0].resampled[0]["kind"] == "ambiguous_answer"
    note = script.seen[2]["text"]
    assert "offered more than one program" in note and "block 1 (```python, lines 4-9), block 2" in note
    assert ("Option B" in note) == (repair == "with_trace")  # with_trace shows the answer back, blind does not


def test_an_answer_still_ambiguous_after_its_reask_is_recorded_ambiguous(compose_cfg, iteration_two, tmp_path):
    cands, script, _, _ = _run(compose_cfg, iteration_two, tmp_path, [OPTIONS, f"```python\n{NEW}```", OPTIONS])
    assert cands[0].code is None and cands[0].failure.kind == FailureKind.AMBIGUOUS_ANSWER and len(script.seen) == 3
    cands, script, _, _ = _run(compose_cfg, iteration_two, tmp_path, [OPTIONS, f"```python\n{NEW}```"],
                               "generate.ambiguity_retries=0")
    assert cands[0].failure.kind == FailureKind.AMBIGUOUS_ANSWER and len(script.seen) == 2
