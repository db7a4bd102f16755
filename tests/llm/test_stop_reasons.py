"""Every stop reason the installed OpenAI and Anthropic SDKs define (read from their type definitions) maps to what
bird does with the answer: read it, or record truncated / refused / incomplete and compile nothing. Each is served
over its own wire format by a local server, with a complete program in the answer, so a wrong mapping trains it."""

from __future__ import annotations

from typing import get_args

import pytest

from bird.llm.anthropic_backend import AnthropicBackend
from bird.llm.base import Message, Request, stop_class
from bird.llm.openai_backend import OpenAIBackend
from bird.registry import get
from bird.reward.contracts import read_answer
from bird.types import FailureKind

from .conftest import llm_cfg
from .fake_servers import FakeLLMServer, Reply

openai_types = pytest.importorskip("openai.types.chat.chat_completion")
anthropic_types = pytest.importorskip("anthropic.types")
beta_types = pytest.importorskip("anthropic.types.beta")

OPENAI_STOPS = get_args(openai_types.Choice.model_fields["finish_reason"].annotation)
ANTHROPIC_STOPS = tuple(dict.fromkeys(get_args(anthropic_types.StopReason) + get_args(beta_types.BetaStopReason)))
# what each must give: None = the program is read
EXPECTED: dict[str, FailureKind | None] = {
    "stop": None, "end_turn": None, "stop_sequence": None,
    "length": FailureKind.TRUNCATED, "max_tokens": FailureKind.TRUNCATED,
    "model_context_window_exceeded": FailureKind.TRUNCATED,
    "refusal": FailureKind.REFUSED,
    "content_filter": FailureKind.INCOMPLETE, "tool_calls": FailureKind.INCOMPLETE,
    "function_call": FailureKind.INCOMPLETE, "tool_use": FailureKind.INCOMPLETE, "pause_turn": FailureKind.INCOMPLETE,
    "compaction": FailureKind.INCOMPLETE,
}
PROGRAM = "def compute_reward(obs, action, next_obs, info):\n    return next_obs['rootx_vel'], {}\n"


def test_every_stop_reason_the_sdks_define_has_an_expected_outcome():
    """A stop reason a new SDK adds fails here until bird maps it (and this table says what it must give)."""
    assert set(OPENAI_STOPS) | set(ANTHROPIC_STOPS) <= set(EXPECTED)
    assert {"stop", "length", "content_filter", "tool_calls", "function_call"} <= set(OPENAI_STOPS)
    assert {"end_turn", "max_tokens", "refusal", "tool_use", "pause_turn"} <= set(ANTHROPIC_STOPS)


@pytest.mark.parametrize(("wire", "stop"), [("openai", s) for s in OPENAI_STOPS] + [("anthropic", s) for s in ANTHROPIC_STOPS])
def test_each_stop_reason_is_read_or_recorded_and_a_stopped_answer_never_compiles(wire, stop, tmp_path):
    backend = {"openai": OpenAIBackend, "anthropic": AnthropicBackend}[wire]
    reply = Reply(f"Here it is.\n\n```python\n{PROGRAM}```\nThat is all.", stop=stop)
    with FakeLLMServer(wire, reply) as srv:  # type: ignore[arg-type]
        response = backend(llm_cfg(wire, srv, tmp_path, max_retries=0)).complete(Request("reward", (Message("user", "r"),)))
    assert response.finish_reason == stop
    reading = read_answer(get("contract", "compute_reward"), response, 4096)
    if EXPECTED[stop] is None:
        assert stop_class(stop) == "complete" and reading.code == PROGRAM and reading.failure is None
    else:
        assert reading.code is None and reading.failure is not None and reading.failure.kind == EXPECTED[stop]
        assert repr(stop) in reading.failure.reason and "compiled" in reading.failure.reason


def test_an_unknown_or_missing_stop_reason_is_incomplete_or_complete():
    assert stop_class("abort") == "incomplete" and stop_class("error") == "incomplete"
    assert stop_class("") == "complete"  # a server that names no reason (the answer is read as written)
