"""The real anthropic/openai SDKs against local wire-format servers: answers, images, faults, concurrency, keys."""

from __future__ import annotations

import base64
import logging
import time
from pathlib import Path

import pytest

from bird.llm.api_base import PLACEHOLDER_KEY, MissingAPIKeyError
from bird.llm.base import LLMError, Message, Request, Response
from bird.llm.factory import make_generator

from .conftest import KEY_ENV, llm_cfg, no_budget
from .fake_servers import FakeLLMServer

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(32))


def _req(i: int = 0, **kw: object) -> Request:
    msgs = (Message("system", "You write reward functions."), Message("user", f"task {i}: make the hopper hop"))
    return Request(purpose="reward", messages=msgs, sample_index=i, **kw)  # type: ignore[arg-type]


def _gen(wire: str, srv: FakeLLMServer, tmp_path: Path, **kw: object):
    return make_generator(llm_cfg(wire, srv, tmp_path, **kw), no_budget(), tmp_path / "journal.jsonl")


def test_backend_returns_text_tokens_and_cost_when_server_answers(wire, with_key, server, tmp_path):
    gen = _gen(wire, server, tmp_path, price_per_mtok={"input": 2.0, "output": 10.0})
    r = gen.complete(_req())
    assert r.text == "```python\nreturn 1\n```"
    assert (r.input_tokens, r.output_tokens) == (10, 4)  # the fake server counts words
    assert r.cost_usd == pytest.approx((10 * 2.0 + 4 * 10.0) / 1e6)
    assert r.attempts == 1 and not r.cached
    body = server.requests[0]
    assert body["model"] == "test-model"
    if wire == "anthropic":  # system prompt goes to the `system` parameter
        assert body["system"] == [{"type": "text", "text": "You write reward functions.",  # the cached prefix
                                   "cache_control": {"type": "ephemeral"}}]
        assert "temperature" not in body  # 1.0 is the API default; recent models refuse it being sent
        assert [m["role"] for m in body["messages"]] == ["user"]
    else:
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert body["max_tokens"] == 4096 and body["temperature"] == 1.0  # compatible server: always sent


def test_backend_sends_png_images_in_provider_format(wire, with_key, server, tmp_path):
    req = Request(purpose="judge", messages=(Message("user", "which frame is better?", images=(PNG, PNG)),))
    _gen(wire, server, tmp_path).complete(req)
    content = server.requests[0]["messages"][0]["content"]
    b64 = base64.b64encode(PNG).decode()
    if wire == "anthropic":
        assert [b["type"] for b in content] == ["image", "image", "text"]
        assert content[0]["source"] == {"type": "base64", "media_type": "image/png", "data": b64}
    else:
        assert [b["type"] for b in content] == ["text", "image_url", "image_url"]
        assert content[1]["image_url"]["url"] == "data:image/png;base64," + b64


def test_backend_waits_for_retry_after_when_rate_limited(wire, with_key, tmp_path):
    with FakeLLMServer(wire, "ok", faults=["429:0.3"]) as srv:
        start = time.monotonic()
        r = _gen(wire, srv, tmp_path).complete(_req())
        elapsed = time.monotonic() - start
    assert r.text == "ok" and r.attempts == 2
    assert srv.statuses == [429, 200]
    assert elapsed >= 0.3  # backoff base is 1 ms: only Retry-After explains the wait


def test_backend_backs_off_longer_after_each_fault_without_retry_after(wire, with_key, tmp_path, monkeypatch):
    """The backend's configured policy (1 s base) reaches the retry loop; waits are recorded, not slept."""
    import bird.llm.api_base as api_base
    from bird.llm.retry import call_with_retry

    slept: list[float] = []
    monkeypatch.setattr(api_base, "call_with_retry",
                        lambda fn, policy, what: call_with_retry(fn, policy, what, sleep=slept.append))
    with FakeLLMServer(wire, "ok", faults=["500", "503", "500"]) as srv:
        r = _gen(wire, srv, tmp_path, retry_base_s=1.0, retry_max_s=60.0).complete(_req())
    assert r.text == "ok" and r.attempts == 4
    assert len(slept) == 3 and 0.5 <= slept[0] <= 1.0 and 1.0 <= slept[1] <= 2.0 and 2.0 <= slept[2] <= 4.0


@pytest.mark.parametrize("fault", ["500", "503", "529", "slow", "truncated", "garbage"])
def test_backend_retries_transient_fault_then_succeeds(wire, with_key, tmp_path, fault):
    with FakeLLMServer(wire, "ok", faults=[fault, fault], slow_s=0.5) as srv:
        r = _gen(wire, srv, tmp_path, timeout_s=0.2).complete(_req())
    assert r.text == "ok" and r.attempts == 3
    assert len(srv.requests) == 3


def test_backend_raises_llm_error_when_retries_are_exhausted(wire, with_key, tmp_path):
    with FakeLLMServer(wire, "ok", faults=["500"] * 10) as srv:
        gen = _gen(wire, srv, tmp_path, max_retries=2)
        with pytest.raises(LLMError, match=r"after 3 attempt\(s\): HTTP 500"):
            gen.complete(_req())
    assert len(srv.requests) == 3  # 1 + max_retries, and the SDK added none of its own


def test_backend_makes_exactly_one_request_when_max_retries_is_zero(wire, with_key, tmp_path):
    with FakeLLMServer(wire, "ok", faults=["503"]) as srv, pytest.raises(LLMError):
        _gen(wire, srv, tmp_path, max_retries=0).complete(_req())
    assert len(srv.requests) == 1  # the SDK's own retry policy is off


def test_backend_does_not_retry_a_bad_request(wire, with_key, tmp_path):
    with FakeLLMServer(wire, "ok", faults=["400"]) as srv, pytest.raises(LLMError, match="HTTP 400"):
        _gen(wire, srv, tmp_path).complete(_req())
    assert len(srv.requests) == 1


def test_backend_reports_timeout_when_every_answer_is_too_slow(wire, with_key, tmp_path):
    with FakeLLMServer(wire, "ok", faults=["slow"] * 3, slow_s=0.6) as srv:
        gen = _gen(wire, srv, tmp_path, timeout_s=0.2, max_retries=1)
        with pytest.raises(LLMError, match=r"llm.timeout_s=0.2"):
            gen.complete(_req())


def test_backend_returns_empty_text_when_server_sends_no_choice(wire, with_key, tmp_path):
    with FakeLLMServer(wire, "ok", faults=["empty"]) as srv:
        r = _gen(wire, srv, tmp_path).complete(_req())
    assert r.text == "" and r.finish_reason == "empty"  # the generate stage records a parse failure


def test_backend_reads_the_providers_stop_reason_for_a_cut_answer(wire, with_key, tmp_path):
    stop = {"openai": "length", "anthropic": "max_tokens"}[wire]  # each wire's word for the output limit
    with FakeLLMServer(wire, lambda body: ("```python\ndef compute_reward(obs", stop)) as srv:
        cut = _gen(wire, srv, tmp_path).complete(_req())
    with FakeLLMServer(wire, "done") as srv:
        whole = _gen(wire, srv, tmp_path).complete(_req())
    assert (cut.finish_reason, cut.truncated) == (stop, True)
    assert whole.finish_reason in ("stop", "end_turn") and not whole.truncated


def test_complete_many_respects_max_concurrency(wire, with_key, tmp_path):
    with FakeLLMServer(wire, "ok", delay_s=0.15) as srv:
        gen = _gen(wire, srv, tmp_path, max_concurrency=3)
        out = gen.complete_many([_req(i) for i in range(8)])
    assert all(isinstance(r, Response) for r in out)
    assert srv.max_in_flight == 3  # concurrent, and never above the limit


def test_complete_many_returns_failures_in_place(wire, with_key, tmp_path):
    with FakeLLMServer(wire, "ok", faults=["400"]) as srv:
        out = _gen(wire, srv, tmp_path, max_concurrency=1).complete_many([_req(0), _req(1)])
    assert isinstance(out[0], LLMError) and isinstance(out[1], Response)


def test_llm_temperature_overrides_the_request(wire, with_key, server, tmp_path):
    _gen(wire, server, tmp_path, temperature=0.25).complete(_req(temperature=0.9))
    assert server.requests[0]["temperature"] == 0.25


def test_openai_api_gets_max_completion_tokens_and_no_default_temperature(tmp_path):
    from bird.llm.openai_backend import OpenAIBackend

    backend = OpenAIBackend(llm_cfg("openai", None, tmp_path), connect=False)  # api.openai.com: no base_url
    assert backend._params(_req())["max_completion_tokens"] == 4096
    assert "temperature" not in backend._params(_req()) and "max_tokens" not in backend._params(_req())
    assert backend._params(_req(temperature=0.5))["temperature"] == 0.5


# keys


def test_missing_key_fails_at_construction_naming_the_variable(wire, tmp_path):
    with pytest.raises(MissingAPIKeyError, match=KEY_ENV[wire]):
        make_generator(llm_cfg(wire, None, tmp_path), no_budget())


def test_missing_key_names_custom_variable_and_remote_base_url(wire, tmp_path):
    cfg = llm_cfg(wire, None, tmp_path, api_key_env="MY_PROXY_KEY", base_url="https://llm.example.com/v1")
    with pytest.raises(ValueError, match="MY_PROXY_KEY.*not a local address"):
        make_generator(cfg, no_budget())


def test_local_server_needs_no_key(wire, server, tmp_path):
    r = _gen(wire, server, tmp_path).complete(_req())
    assert r.text
    sent = server.headers[0].get("authorization", "") + server.headers[0].get("x-api-key", "")
    assert PLACEHOLDER_KEY in sent


def test_replay_mode_needs_no_key(wire, tmp_path):
    gen = make_generator(llm_cfg(wire, None, tmp_path, cache="replay"), no_budget())
    assert gen.provider == wire


def test_key_never_reaches_errors_journal_cache_or_logs(wire, with_key, tmp_path, capfd, caplog):
    """A server that echoes the credentials it received in its error body; the key must not come back out."""
    caplog.set_level(logging.DEBUG)  # SDK and HTTP client debug logs included
    received: list[str] = []

    class EchoServer(FakeLLMServer):
        def _error(self, status, message):
            h = self.headers[-1]
            received.append(h.get("authorization", "") + h.get("x-api-key", ""))
            return super()._error(status, f"bad key {received[-1]}")

    with EchoServer(wire, "ok", faults=["500"] * 3 + ["400"]) as srv:
        gen = _gen(wire, srv, tmp_path, max_retries=5, cache="readwrite")
        with pytest.raises(LLMError) as err:
            gen.complete(_req(0))
        gen.complete(_req(1))  # a success, cached
    assert with_key in received[0]  # the server really did echo it
    assert with_key not in str(err.value) and "***" in str(err.value)
    assert with_key not in repr(gen.inner) and with_key not in str(gen.describe())
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert with_key not in path.read_text(errors="replace"), path
    out, errs = capfd.readouterr()
    assert with_key not in out + errs + caplog.text
    assert "HTTP Request" in caplog.text or caplog.records  # the logs were really captured
