"""The one text-generation interface: every generator (offline synthesiser, Anthropic, OpenAI) answers a Request."""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from bird.state_codec import register_saved

__all__ = ["Message", "Request", "record_key", "Response", "LLMError", "BudgetExhausted", "Generator", "WrappingGenerator", "AnswerTool",
           "TRUNCATION_STOPS", "StopClass", "stop_class", "NOT_APPLICABLE"]

Role = Literal["system", "user", "assistant"]
#: Stop reasons that mean the output limit cut the answer: OpenAI (and compatible servers) `length`, Anthropic
#: `max_tokens` and `model_context_window_exceeded`.
TRUNCATION_STOPS = frozenset({"length", "max_tokens", "model_context_window_exceeded"})
#: The answer ended as the model meant it ("" = the server named no reason; "empty" = no content came back).
_COMPLETE_STOPS = frozenset({"stop", "end_turn", "stop_sequence", "", "empty"})
_REFUSAL_STOPS = frozenset({"refusal"})
StopClass = Literal["complete", "truncated", "refused", "incomplete"]
#: What a generator that samples no model (the offline synthesiser) records as its temperature and reasoning effort.
NOT_APPLICABLE = "not applicable"


def stop_class(reason: str) -> StopClass:
    """How bird reads a provider's stop reason (docs/llm.md, "Stop reasons"): complete, truncated (the output limit),
    refused, or incomplete (a content filter, a tool or function call, a paused turn, any reason bird does not know)."""
    if reason in _COMPLETE_STOPS:
        return "complete"
    if reason in TRUNCATION_STOPS:
        return "truncated"
    return "refused" if reason in _REFUSAL_STOPS else "incomplete"


@register_saved
@dataclass(frozen=True)
class Message:
    role: Role
    content: str
    images: tuple[bytes, ...] = ()  # PNG bytes, for VLM judges


@register_saved
@dataclass(frozen=True)
class AnswerTool:
    """A tool the model is made to call to give its answer (generate.answer_form=tool): one string argument."""

    name: str
    description: str
    argument: str  # the parameter that holds the answer (the program)
    argument_description: str = ""

    def parameters(self) -> dict[str, Any]:
        """The JSON schema of the call's arguments."""
        prop = {"type": "string", "description": self.argument_description or self.argument}
        return {"type": "object", "properties": {self.argument: prop}, "required": [self.argument],
                "additionalProperties": False}


@register_saved
@dataclass(frozen=True)
class Request:
    """What a method asks a generator.

    `context` is the structured form of exactly what the messages show (task text, observation index,
    feedback statistics, ...). The offline synthesiser reads it; LLM backends read the messages. Nothing
    that is not rendered into the messages may be put in `context`.
    """

    purpose: str  # "reward" (first proposal) | "mutation" (after feedback) | later: "judge", "decompose", ...
    messages: tuple[Message, ...]
    context: dict[str, Any] = field(default_factory=dict)
    temperature: float = 1.0
    max_tokens: int = 4096
    sample_index: int = 0  # distinguishes the K iid samples of one prompt (part of the cache key)
    seed: int = 0  # the search seed (used by deterministic generators)
    tool: AnswerTool | None = None  # the answer is asked for as this tool's call (None: in the text)
    reasoning_effort: str = "none"  # set by an LLM backend from llm.reasoning_effort (ApiBackend.prepare)

    def key(self, provider: str, model: str) -> str:
        """Content address of this request for the response cache."""
        return record_key(provider, model, self.record())

    def record(self) -> dict[str, Any]:
        """Every field the key is made from, as JSON: what a cache entry and a bundle's transcript keep of the
        request. Images appear as their SHA-256 digests (`image_sha256`, per message) when any message has one; the
        answer tool (`tool`) and the reasoning effort only when there is one (not none), so the keys of plain text
        answers stay what they were."""
        out: dict[str, Any] = {"purpose": self.purpose, "messages": self.messages_json(),
                               "temperature": self.temperature, "max_tokens": self.max_tokens,
                               "sample_index": self.sample_index, "seed": self.seed}
        if any(m.images for m in self.messages):
            out["image_sha256"] = [[hashlib.sha256(i).hexdigest() for i in m.images] for m in self.messages]
        if self.tool is not None:
            out["tool"] = asdict(self.tool)
        if self.reasoning_effort != "none":
            out["reasoning_effort"] = self.reasoning_effort
        return out

    def messages_json(self) -> list[dict[str, Any]]:
        return [{"role": m.role, "content": m.content, "n_images": len(m.images)} for m in self.messages]


def record_key(provider: str, model: str, record: dict[str, Any]) -> str:
    """The key of the request `record` (Request.record) describes. Raises ValueError when the record cannot say
    (a message counts images whose digests it does not carry, a field is missing or of the wrong type)."""
    try:
        messages = record["messages"]
        digests = record.get("image_sha256") or [[] for _ in messages]
        if len(digests) != len(messages):
            raise ValueError("image_sha256 does not have one list per message")
        shown = []
        for m, images in zip(messages, digests, strict=True):
            if int(m.get("n_images") or 0) != len(images):
                raise ValueError("a message counts images whose digests the record does not carry")
            if not all(isinstance(x, str) for x in (m["role"], m["content"], *images)):
                raise ValueError("a message's role, content and image digests must be text")
            shown.append({"role": m["role"], "content": m["content"], "images": list(images)})
        payload = {
            "provider": provider,
            "model": model,
            "messages": shown,
            "temperature": record["temperature"],
            "max_tokens": record["max_tokens"],
            "sample_index": record["sample_index"],
            # the search seed: a seed sweep gets independent samples instead of re-reading one seed's answers
            "seed": record["seed"],
        }
        if record.get("tool") is not None:
            if not isinstance(record["tool"], dict):
                raise ValueError("the answer tool must be a mapping")
            payload["tool"] = record["tool"]
        if record.get("reasoning_effort", "none") != "none":
            if not isinstance(record["reasoning_effort"], str):
                raise ValueError("the reasoning effort must be text")
            payload["reasoning_effort"] = record["reasoning_effort"]
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a request record ({type(exc).__name__}: {exc})") from None
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class Response:
    text: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    cached: bool = False
    # provider's stop reason ("stop", "length", "end_turn", "empty" = no choice/content returned)
    finish_reason: str = ""
    # HTTP attempts made (0 = served from the cache)
    attempts: int = 1
    # what this answer cost when it was generated; differs from cost_usd (0) on a cache hit. None = cost_usd
    uncached_cost_usd: float | None = None
    # what the provider returned beside the text, set aside before the text is read (never code):
    # reasoning (thinking blocks, reasoning_content, thinking parts), a refusal's text, tool calls
    # ({"name", "arguments"}), and a note per content part that is not text
    thinking: str = ""
    refusal: str = ""
    tool_calls: tuple[dict[str, Any], ...] = ()
    set_aside: tuple[str, ...] = ()
    # parts of input_tokens the provider read from / wrote to its prompt cache (priced as such)
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def truncated(self) -> bool:
        """The provider stopped the answer at the output limit (it is incomplete)."""
        return self.finish_reason in TRUNCATION_STOPS

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class LLMError(RuntimeError):
    """A generator could not answer (after its own retries). The stage records it as failure kind llm_error."""


class Generator(ABC):
    """Base class of all generators. Subclasses implement `complete`; concurrency lives here once."""

    provider: str = "base"
    #: Set on non-LLM generators so every output can say what answered.
    label: str = ""
    #: Answers depend only on Request.key(): the response cache may serve them (LLM backends set True).
    cacheable: bool = False

    def __init__(self, model: str, max_concurrency: int = 4) -> None:
        self.model = model
        self.max_concurrency = max(1, max_concurrency)

    @abstractmethod
    def complete(self, request: Request) -> Response:
        """Answer one request or raise LLMError."""

    def complete_many(self, requests: Sequence[Request]) -> list[Response | LLMError]:
        """Answer requests concurrently (up to max_concurrency); a failure is returned in place, not raised."""

        def one(req: Request) -> Response | LLMError:
            try:
                return self.complete(req)
            except LLMError as exc:
                return exc

        if len(requests) <= 1 or self.max_concurrency == 1:
            return [one(r) for r in requests]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(requests))) as pool:
            return list(pool.map(one, requests))

    def prepare(self, request: Request) -> Request:
        """The request as it will be sent (config overrides applied); the cache keys on this."""
        return request

    def cache_provider(self) -> str:
        """Provider part of the cache key (an OpenAI-compatible server adds its address)."""
        return self.provider

    def cache_key(self, request: Request) -> str | None:
        """The response-cache address of `request` as this generator sends it; None when it is not cacheable."""
        if not self.cacheable:
            return None
        return self.prepare(request).key(self.cache_provider(), self.model)

    def sampling(self, request: Request) -> dict[str, Any]:
        """The temperature and reasoning effort `request` is answered with (a call record's fields); a generator
        that samples no model records them as not applicable."""
        return {"temperature": NOT_APPLICABLE, "reasoning_effort": NOT_APPLICABLE}

    def describe(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "label": self.label,
                "reasoning_effort": NOT_APPLICABLE}


class BudgetExhausted(LLMError):
    """budget.max_llm_calls or budget.max_cost_usd was reached: generation stops, the search finishes."""


class WrappingGenerator(Generator):
    """A generator in front of another (the batch runner, the sweep's gate, the response cache): the inner one's model,
    provider, label and cacheability, and what it sends (`prepare`, `cache_provider`), samples with (`sampling`),
    describes and batches, unless the wrapper says otherwise; its other attributes (price, cfg) read through."""

    def __init__(self, inner: Generator) -> None:
        super().__init__(inner.model, inner.max_concurrency)
        self.inner = inner
        self.provider, self.label, self.cacheable = inner.provider, inner.label, inner.cacheable

    def prepare(self, request: Request) -> Request:
        return self.inner.prepare(request)

    def cache_provider(self) -> str:
        return self.inner.cache_provider()

    def sampling(self, request: Request) -> dict[str, Any]:
        return self.inner.sampling(request)

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    @property
    def batched(self) -> bool:
        return bool(getattr(self.inner, "batched", False))

    def __getattr__(self, name: str) -> Any:
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)
