"""Registration, lazy SDK imports, the shipped conf/llm files, key-location rules, retry timing."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from bird import registry
from bird.config.schema import LLMConfig
from bird.llm.api_base import is_local_url
from bird.llm.base import LLMError
from bird.llm.prices import price_for
from bird.llm.retry import RetryPolicy, TransientError, call_with_retry, parse_retry_after

CONF = Path(__file__).resolve().parents[2] / "conf" / "llm"


def test_backends_are_registered_without_importing_the_sdks():
    code = (
        "import sys; from bird import registry; names = registry.names('llm'); "
        "print(names, 'anthropic' in sys.modules, 'openai' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "'anthropic', " in out and "'openai'" in out and out.strip().endswith("False False")


@pytest.mark.parametrize("name", ["anthropic", "openai"])
def test_conf_llm_file_matches_schema_and_registry(name):
    node = OmegaConf.load(CONF / f"{name}.yaml")
    cfg = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(LLMConfig), node))  # unknown keys fail here
    assert cfg.backend == name and name in registry.names("llm")
    assert cfg.price_per_mtok is None  # the price table's entry, which names its source and date
    price = price_for(name, cfg.model)
    assert price is not None and price.input > 0 and price.output > 0 and price.source and price.date


@pytest.mark.parametrize(
    "url, local",
    [
        ("http://127.0.0.1:8000/v1", True), ("http://localhost:11434/v1", True), ("http://[::1]:8000/v1", True),
        ("http://192.168.1.20:8000/v1", True), ("http://10.0.0.5/v1", True),
        ("https://api.openai.com/v1", False), ("http://8.8.8.8/v1", False), (None, False),
    ],
)
def test_is_local_url(url, local):
    assert is_local_url(url) is local


def test_parse_retry_after_reads_seconds_milliseconds_and_dates():
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # in the past
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_backoff_doubles_with_jitter_and_is_capped():
    policy, rng = RetryPolicy(max_retries=8, base_s=1.0, cap_s=10.0), random.Random(0)
    waits = [policy.wait_s(k, None, rng) for k in range(6)]
    for k, w in enumerate(waits):
        full = min(10.0, 2.0**k)
        assert full / 2 <= w <= full
    assert policy.wait_s(0, 120.0, rng) == 10.0  # Retry-After is capped too


def test_call_with_retry_sleeps_between_attempts_then_raises():
    slept: list[float] = []

    def fail() -> None:
        raise TransientError("HTTP 503", retry_after=0.5)

    with pytest.raises(LLMError, match=r"thing failed after 3 attempt\(s\): HTTP 503"):
        call_with_retry(fail, RetryPolicy(max_retries=2), "thing", sleep=slept.append)
    assert slept == [0.5, 0.5]


def test_waits_grow_between_attempts_when_the_server_gives_no_retry_after():
    slept: list[float] = []

    def fail() -> None:
        raise TransientError("HTTP 503")  # no Retry-After

    policy = RetryPolicy()  # the shipped defaults: 1 s base, doubling, 60 s cap
    with pytest.raises(LLMError):
        call_with_retry(fail, policy, "thing", sleep=slept.append, rng=random.Random(0))
    assert len(slept) == policy.max_retries == 6
    for k, wait in enumerate(slept):
        full = min(60.0, 2.0**k)
        assert full / 2 <= wait <= full, (k, slept)
    assert slept == sorted(slept) and slept[-1] > 10 * slept[0]


class _EdgeRng:
    """A jitter source that always draws one end of the interval it is given."""

    def __init__(self, top: bool) -> None:
        self.top = top

    def uniform(self, a: float, b: float) -> float:
        return b if self.top else a


def test_equal_jitter_spans_half_to_all_of_the_backoff():
    policy = RetryPolicy(base_s=2.0, cap_s=20.0)
    assert [policy.wait_s(k, None, _EdgeRng(top=False)) for k in range(5)] == [1.0, 2.0, 4.0, 8.0, 10.0]
    assert [policy.wait_s(k, None, _EdgeRng(top=True)) for k in range(5)] == [2.0, 4.0, 8.0, 16.0, 20.0]
    assert policy.wait_s(3, 0.0, _EdgeRng(top=True)) == 0.0  # Retry-After: 0 means now
    assert policy.wait_s(3, -5.0, _EdgeRng(top=True)) == 0.0  # a negative one too


def test_call_with_retry_returns_the_answer_and_attempts_and_names_a_request_by_default():
    answers = iter([TransientError("HTTP 529"), TransientError("HTTP 529"), "done"])

    def flaky() -> str:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert call_with_retry(flaky, RetryPolicy(max_retries=2), sleep=lambda s: None) == ("done", 3)
    with pytest.raises(LLMError, match=r"^request failed after 1 attempt\(s\): HTTP 500$"):
        call_with_retry(lambda: (_ for _ in ()).throw(TransientError("HTTP 500")), RetryPolicy(max_retries=0))


def test_cli_without_key_fails_fast_naming_the_variable(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    cmd = [sys.executable, "-m", "bird", "llm=openai", "budget=smoke", "run.progress=false",
           f"hydra.run.dir={tmp_path / 'run'}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode != 0
    assert "set the environment variable OPENAI_API_KEY" in proc.stderr
    assert not (tmp_path / "run" / "candidates").exists()  # nothing was generated or trained
