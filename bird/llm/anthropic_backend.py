"""`llm=anthropic`: the Anthropic Messages API through the anthropic SDK."""

from __future__ import annotations

import base64
from typing import Any

from bird.config.schema import LLMConfig
from bird.llm.api_base import Answer, ApiBackend
from bird.llm.base import TRUNCATION_STOPS, AnswerTool, LLMError, Message, Request
from bird.llm.content import read_parts
from bird.llm.prompt_cache import anthropic_usage, mark_anthropic

__all__ = ["AnthropicBackend"]


def _import_sdk() -> Any:
    try:
        import anthropic
    except ImportError as exc:  # the `llm` extra is optional
        raise ImportError("llm=anthropic needs the anthropic SDK: pip install 'bird-ird[llm]'") from exc
    return anthropic


def _content(m: Message) -> str | list[dict[str, Any]]:
    if not m.images:
        return m.content
    blocks: list[dict[str, Any]] = [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(png).decode()}}
        for png in m.images
    ]
    return [*blocks, {"type": "text", "text": m.content}]  # images before the text that refers to them


def _tool_params(tool: AnswerTool) -> dict[str, Any]:
    """The answer tool, and tool_choice making the model call it (generate.answer_form=tool)."""
    return {"tools": [{"name": tool.name, "description": tool.description, "input_schema": tool.parameters()}],
            "tool_choice": {"type": "tool", "name": tool.name}}


class AnthropicBackend(ApiBackend):
    """Messages API; system messages go to the `system` parameter."""

    provider = "anthropic"
    key_env = "ANTHROPIC_API_KEY"

    def _connect(self, api_key: str) -> Any:
        sdk = _import_sdk()
        return sdk.Anthropic(api_key=api_key, base_url=self.cfg.base_url, timeout=self.cfg.timeout_s, max_retries=0)

    def _params(self, request: Request) -> dict[str, Any]:
        system = [m for m in request.messages if m.role == "system"]
        if any(m.images for m in system):
            raise LLMError("llm=anthropic: a system message cannot carry images")
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens,
            "messages": [{"role": m.role, "content": _content(m)} for m in request.messages if m.role != "system"],
        }
        if system:
            params["system"] = "\n\n".join(m.content for m in system)
        if request.reasoning_effort != "none":  # adaptive thinking at that effort (its tokens count in max_tokens)
            params["thinking"] = {"type": "adaptive"}
            params["output_config"] = {"effort": request.reasoning_effort}
        temperature = self.sent_temperature(request)  # None while thinking: the API takes only its default 1.0
        if temperature is not None and temperature != 1.0:  # the SDK no longer names it; recent models answer 400
            params["extra_body"] = {"temperature": temperature}  # to any value but 1.0
        if request.tool is not None:
            params.update(_tool_params(request.tool))
            if "thinking" in params:  # thinking takes no forced tool choice: the tool is offered, the prompt asks for it
                params["tool_choice"] = {"type": "auto"}
        return mark_anthropic(params, request) if self.cfg.prompt_cache else params

    def _call(self, request: Request) -> Answer:
        sdk = _import_sdk()
        try:
            out = self._client.messages.create(**self._params(request))
        except (sdk.AnthropicError, ValueError) as exc:  # ValueError: a truncated or non-JSON body
            raise self.classify_sdk_error(exc, sdk) from None
        return self._answer(out)

    def _answer(self, out: Any) -> Answer:
        """An Answer from a Message (a call's or a batch result's)."""
        content = read_parts(out.content or [], "content block")  # thinking blocks set aside, never read as code
        finish = out.stop_reason or ""
        if not out.content and finish not in TRUNCATION_STOPS:  # no content at all; a cut answer stays cut
            finish = "empty"
        n_in, n_out, cached, written = anthropic_usage(out.usage)
        return Answer(content.text, out.model or self.model, n_in, n_out, finish, content, cached, written)


    # -- Message Batches (llm.mode=batch; bird/llm/batch.py) --------------------------------------------------------
    def _batch_sdk(self, fn: Any) -> Any:
        sdk = _import_sdk()
        try:
            return fn()
        except (sdk.AnthropicError, ValueError) as exc:
            raise self.classify_sdk_error(exc, sdk) from None

    def batch_submit(self, items: list[tuple[str, Request]]) -> str:
        """Create a Message Batch of (custom_id, request); returns its id."""
        requests = []
        for cid, request in items:
            params = self._params(request)
            params.update(params.pop("extra_body", None) or {})  # a batch request's params are the body itself
            requests.append({"custom_id": cid, "params": params})
        return self._batch_sdk(lambda: self._client.messages.batches.create(requests=requests)).id

    def batch_ended(self, batch_id: str) -> bool:
        return self._batch_sdk(lambda: self._client.messages.batches.retrieve(batch_id)).processing_status == "ended"

    def batch_results(self, batch_id: str) -> dict[str, Answer | LLMError]:
        out: dict[str, Answer | LLMError] = {}
        for item in self._batch_sdk(lambda: list(self._client.messages.batches.results(batch_id))):
            result = item.result
            if result.type == "succeeded":
                out[item.custom_id] = self._answer(result.message)
            else:  # errored, canceled, expired
                error = getattr(getattr(result, "error", None), "error", None)
                out[item.custom_id] = LLMError(f"batch {batch_id}: request {result.type}"
                                               + (f" ({getattr(error, 'message', error)})" if error else ""))
        return out


def make_anthropic(cfg: LLMConfig) -> AnthropicBackend:
    return AnthropicBackend(cfg, connect=cfg.cache != "replay")
