"""`llm=openai`: the OpenAI chat-completions API, or any OpenAI-compatible server through `llm.base_url`."""

from __future__ import annotations

import base64
import json
from typing import Any

from bird.config.schema import LLMConfig
from bird.llm.api_base import Answer, ApiBackend
from bird.llm.base import AnswerTool, LLMError, Message, Request
from bird.llm.content import Content, from_openai_message
from bird.llm.prompt_cache import openai_usage
from bird.llm.retry import TransientError

__all__ = ["OpenAIBackend"]


def _import_sdk() -> Any:
    try:
        import openai
    except ImportError as exc:  # the `llm` extra is optional
        raise ImportError("llm=openai needs the openai SDK: pip install 'bird-ird[llm]'") from exc
    return openai


def _content(m: Message) -> str | list[dict[str, Any]]:
    if not m.images:
        return m.content
    parts: list[dict[str, Any]] = [{"type": "text", "text": m.content}]
    for png in m.images:
        url = "data:image/png;base64," + base64.b64encode(png).decode()
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def _tool_params(tool: AnswerTool) -> dict[str, Any]:
    """The answer tool as a strict function the model must call (generate.answer_form=tool)."""
    fn = {"name": tool.name, "description": tool.description, "parameters": tool.parameters(), "strict": True}
    return {"tools": [{"type": "function", "function": fn}],
            "tool_choice": {"type": "function", "function": {"name": tool.name}}}


class OpenAIBackend(ApiBackend):
    """Chat completions through the openai SDK; one client shared by all threads."""

    provider = "openai"
    key_env = "OPENAI_API_KEY"

    def _connect(self, api_key: str) -> Any:
        sdk = _import_sdk()
        return sdk.OpenAI(api_key=api_key, base_url=self.cfg.base_url, timeout=self.cfg.timeout_s, max_retries=0)

    def _params(self, request: Request) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": _content(m)} for m in request.messages],
        }
        if request.reasoning_effort != "none":
            params["reasoning_effort"] = request.reasoning_effort
        temperature = self.sent_temperature(request)  # None: api.openai.com while reasoning (only its default 1.0)
        if self.cfg.base_url:  # compatible servers: classic names, temperature always sent (their defaults vary)
            params.update(max_tokens=request.max_tokens, temperature=temperature)
        else:  # api.openai.com: reasoning models take max_completion_tokens and reject a non-default temperature
            params["max_completion_tokens"] = request.max_tokens
            if temperature is not None and temperature != 1.0:
                params["temperature"] = temperature
        if request.tool is not None:
            params.update(_tool_params(request.tool))
        return params

    def _call(self, request: Request) -> Answer:
        sdk = _import_sdk()
        try:
            out = self._client.chat.completions.create(**self._params(request))
        except (sdk.OpenAIError, ValueError) as exc:  # ValueError: a truncated or non-JSON body
            raise self.classify_sdk_error(exc, sdk) from None
        if not isinstance(out, sdk.types.chat.ChatCompletion):  # some servers answer 200 with a non-JSON body
            raise TransientError(f"malformed response body: {str(out)[:200]!r}")
        return self._answer(out)

    def _answer(self, out: Any) -> Answer:
        """An Answer from a ChatCompletion (a call's or a batch result's)."""
        n_in, n_out, cached, written = openai_usage(out.usage)
        if not out.choices:
            return Answer("", out.model or self.model, n_in, n_out, "empty", Content(), cached, written)
        choice = out.choices[0]
        if choice.message is None:
            raise LLMError("answer without a message")
        content = from_openai_message(choice.message)  # list content joined, reasoning set aside, never read as code
        return Answer(content.text, out.model or self.model, n_in, n_out, choice.finish_reason or "", content, cached,
                      written)


    # -- the Batch API (llm.mode=batch; bird/llm/batch.py) -----------------------------------------------------------
    def _batch_sdk(self, fn: Any) -> Any:
        sdk = _import_sdk()
        try:
            return fn()
        except (sdk.OpenAIError, ValueError) as exc:
            raise self.classify_sdk_error(exc, sdk) from None

    def batch_submit(self, items: list[tuple[str, Request]]) -> str:
        """Upload the requests as a JSONL file and create a batch of chat completions; returns its id."""
        lines = "".join(json.dumps({"custom_id": cid, "method": "POST", "url": "/v1/chat/completions",
                                    "body": self._params(request)}) + "\n" for cid, request in items)
        upload = self._batch_sdk(lambda: self._client.files.create(
            file=("bird_batch.jsonl", lines.encode(), "application/jsonl"), purpose="batch"))
        return self._batch_sdk(lambda: self._client.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h")).id

    def batch_ended(self, batch_id: str) -> bool:
        status = self._batch_sdk(lambda: self._client.batches.retrieve(batch_id)).status
        return status in ("completed", "failed", "expired", "cancelled")

    def batch_results(self, batch_id: str) -> dict[str, Answer | LLMError]:
        sdk = _import_sdk()
        batch = self._batch_sdk(lambda: self._client.batches.retrieve(batch_id))
        out: dict[str, Answer | LLMError] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            text = self._batch_sdk(lambda f=file_id: self._client.files.content(f).text) if file_id else ""
            for line in text.splitlines():
                rec = json.loads(line) if line.strip() else None
                if not isinstance(rec, dict) or not isinstance(rec.get("custom_id"), str):
                    continue
                response = rec.get("response") or {}
                if response.get("status_code") == 200 and isinstance(response.get("body"), dict):
                    out[rec["custom_id"]] = self._answer(sdk.types.chat.ChatCompletion.model_validate(response["body"]))
                else:
                    why = (rec.get("error") or {}).get("message") or f"HTTP {response.get('status_code')}"
                    out[rec["custom_id"]] = LLMError(f"batch {batch_id}: request failed ({why})")
        if batch.status != "completed" and not out:
            raise LLMError(f"batch {batch_id} ended {batch.status}")
        return out


def make_openai(cfg: LLMConfig) -> OpenAIBackend:
    return OpenAIBackend(cfg, connect=cfg.cache != "replay")
