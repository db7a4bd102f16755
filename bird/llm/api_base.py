"""Shared driver of the HTTP backends: key lookup, retries, cost, secret redaction. A backend adds `_connect` and `_call`."""

from __future__ import annotations

import ipaddress
import os
import time
from abc import abstractmethod
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from bird import registry
from bird.config.schema import LLMConfig
from bird.llm.base import Generator, LLMError, Request, Response
from bird.llm.content import Content
from bird.llm.prices import Price, Usage, call_cost, resolve_price
from bird.llm.retry import RetryPolicy, TransientError, call_with_retry, parse_retry_after

__all__ = ["ApiBackend", "Answer", "MissingAPIKeyError", "is_local_url", "resolve_api_key"]

#: Sent as the key to a keyless local server (vLLM, llama.cpp, Ollama); the SDKs refuse an empty key.
PLACEHOLDER_KEY = "bird-no-key"


class MissingAPIKeyError(ValueError):
    """The chosen provider needs a key and its environment variable is unset."""


@dataclass(frozen=True)
class Answer:
    """What one successful HTTP call returned, before accounting; `content`: its parts beside the text."""

    text: str
    model: str
    input_tokens: int
    output_tokens: int
    finish_reason: str
    content: Content = field(default_factory=Content)
    # parts of input_tokens: read from / written to the provider's prompt cache
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0


def is_local_url(url: str | None) -> bool:
    """True for a loopback, private-network or `localhost` address (servers that usually need no key)."""
    if not url:
        return False
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_loopback or ip.is_private or ip.is_link_local or ip.is_unspecified


def resolve_api_key(cfg: LLMConfig, default_env: str) -> str:
    """The key from `llm.api_key_env` (default `default_env`); a placeholder for a keyless local server.

    Raises MissingAPIKeyError naming the variable to set.
    """
    env = cfg.api_key_env or default_env
    key = os.environ.get(env, "").strip()
    if key:
        return key
    if is_local_url(cfg.base_url):
        return PLACEHOLDER_KEY
    hint = f" (llm.base_url={cfg.base_url} is not a local address)" if cfg.base_url else ""
    raise MissingAPIKeyError(
        f"llm={cfg.backend} needs an API key: set the environment variable {env}{hint}, "
        "or name another variable with llm.api_key_env=NAME. Without a key, llm.cache=replay re-runs a recorded search."
    )


class ApiBackend(Generator):
    """Driver of an HTTP backend. Subclasses set `provider`, `key_env`, and implement `_connect` and `_call`.

    :param cfg: the llm config.
    :param connect: False builds no client and needs no key (llm.cache=replay never calls the network).
    """

    cacheable = True
    key_env = ""

    def __init__(self, cfg: LLMConfig, connect: bool = True) -> None:
        super().__init__(cfg.model, cfg.max_concurrency)
        self.cfg = cfg
        self.policy = RetryPolicy(cfg.max_retries, cfg.retry_base_s, cfg.retry_max_s)
        # llm.price_per_mtok, else the price table's entry (conf/llm/prices/); None = no price known
        self.price: Price | None = resolve_price(self.provider, cfg.model, cfg.price_per_mtok)
        self._client: Any = None
        self._secret = ""
        if connect:
            self._secret = resolve_api_key(cfg, self.key_env)
            self._client = self._connect(self._secret)

    @abstractmethod
    def _connect(self, api_key: str) -> Any:
        """Build the SDK client (SDK retries off, timeout from config)."""

    @abstractmethod
    def _call(self, request: Request) -> Answer:
        """One HTTP call. Raise TransientError for retryable faults, LLMError for permanent ones."""

    def cache_provider(self) -> str:
        return self.provider if not self.cfg.base_url else f"{self.provider}@{self.cfg.base_url.rstrip('/')}"

    def prepare(self, request: Request) -> Request:
        temperature = request.temperature if self.cfg.temperature is None else self.cfg.temperature
        if temperature == request.temperature and self.cfg.reasoning_effort == request.reasoning_effort:
            return request
        return replace(request, temperature=temperature, reasoning_effort=self.cfg.reasoning_effort)

    def sent_temperature(self, request: Request) -> float | None:
        """The temperature to send for a prepared request; None while reasoning on a provider that then takes only
        one (registry declaration `reasoning_temperature`, e.g. Anthropic's thinking): it is not sent, and the
        model samples at that one (docs/llm.md)."""
        if request.reasoning_effort != "none" and self._reasoning_temperature() is not None:
            return None
        return request.temperature

    def _reasoning_temperature(self) -> float | None:
        if self.cfg.backend not in registry.names("llm"):
            return None
        fixed = registry.declared("llm", self.cfg.backend).reasoning_temperature
        return fixed(self.cfg) if fixed is not None else None

    def sampling(self, request: Request) -> dict[str, Any]:
        request = self.prepare(request)
        out: dict[str, Any] = {"temperature": request.temperature, "reasoning_effort": request.reasoning_effort}
        if self.sent_temperature(request) is None:  # not sent: the provider samples at its only reasoning temperature
            out["temperature"] = self._reasoning_temperature()
            if request.temperature != out["temperature"]:
                out["requested_temperature"] = request.temperature
        return out

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "reasoning_effort": self.cfg.reasoning_effort,
                "temperature": self.cfg.temperature}

    def complete(self, request: Request) -> Response:
        if self._client is None:
            raise LLMError(f"llm={self.provider} was built without a client (llm.cache=replay): no network call")
        request = self.prepare(request)
        start = time.monotonic()
        what = f"llm={self.provider} model={self.model} purpose={request.purpose} sample={request.sample_index}"
        try:
            answer, attempts = call_with_retry(lambda: self._call_safely(request), self.policy, what)
        except LLMError as exc:
            raise LLMError(self.redact(str(exc))) from None
        return self.response(answer, attempts, time.monotonic() - start)

    def response(self, answer: Answer, attempts: int, latency_s: float, batch: bool = False) -> Response:
        """The Response of an answer, costed at this backend's price (a batch call at the batch price)."""
        usage = Usage(answer.input_tokens, answer.output_tokens, answer.cached_input_tokens, answer.cache_write_tokens)
        cost = call_cost(usage, self.price, batch)
        return Response(
            text=answer.text,
            model=answer.model or self.model,
            input_tokens=answer.input_tokens,
            output_tokens=answer.output_tokens,
            cost_usd=cost,
            latency_s=round(latency_s, 4),
            finish_reason=answer.finish_reason,
            attempts=attempts,
            uncached_cost_usd=cost,
            cached_input_tokens=answer.cached_input_tokens,
            cache_write_tokens=answer.cache_write_tokens,
            thinking=answer.content.thinking,
            refusal=answer.content.refusal,
            tool_calls=answer.content.tool_calls,
            set_aside=answer.content.set_aside,
        )

    def _call_safely(self, request: Request) -> Answer:
        try:
            return self._call(request)
        except (TransientError, LLMError):
            raise
        except Exception as exc:  # an SDK error not classified by the backend: permanent, never a crash
            raise LLMError(self.redact(f"{type(exc).__name__}: {_short(str(exc))}")) from None

    def classify_sdk_error(self, exc: Exception, sdk: Any) -> Exception:
        """Map an SDK exception (anthropic/openai share the class names) to TransientError or LLMError."""
        if isinstance(exc, sdk.APIStatusError):
            status, headers = exc.status_code, exc.response.headers
            msg = f"HTTP {status}: {_short(exc.message)}"
            should = (headers.get("x-should-retry") or "").lower()
            retry = should == "true" or (should != "false" and (status in (408, 409, 429) or status >= 500))
            return TransientError(msg, parse_retry_after(headers)) if retry else LLMError(msg)
        if isinstance(exc, sdk.APITimeoutError):
            return TransientError(f"no answer within llm.timeout_s={self.cfg.timeout_s}")
        if isinstance(exc, sdk.APIConnectionError):
            return TransientError(f"connection error: {_short(str(exc.__cause__ or exc))}")
        if isinstance(exc, (sdk.APIResponseValidationError, ValueError)):  # truncated or invalid body
            return TransientError(f"malformed response body: {_short(str(exc))}")
        return LLMError(f"{type(exc).__name__}: {_short(str(exc))}")

    def redact(self, text: str) -> str:
        """Remove the API key from a message (a server or SDK may echo it)."""
        if self._secret and self._secret != PLACEHOLDER_KEY:
            text = text.replace(self._secret, "***")
        return text

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.cfg.base_url!r})"


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."
