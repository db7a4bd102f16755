"""Local HTTP servers (127.0.0.1, ephemeral port) speaking the OpenAI chat-completions and Anthropic Messages wire
formats, with scripted fault injection. The real SDKs are pointed at them through base_url."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeLLMServer", "Reply", "prompt_text"]


@dataclass
class Reply:
    """A scripted answer, written in each wire's own form.

    :param text: the text (None: no content at all).
    :param stop: the stop reason ("" = the wire's normal one, or its tool-call stop when `tool` is set).
    :param thinking: Anthropic: a `thinking` block before the text; OpenAI: the `reasoning_content` field.
    :param parts: OpenAI: `message.content` as this list of parts; Anthropic: these content blocks (text unused).
    :param refusal: OpenAI: the `message.refusal` field (Anthropic: the text, with stop reason refusal).
    :param tool: (name, arguments) of one tool call: OpenAI `tool_calls`, Anthropic a `tool_use` block.
    """

    text: str | None = ""
    stop: str = ""
    thinking: str = ""
    parts: list[dict[str, Any]] | None = None
    refusal: str | None = None
    tool: tuple[str, dict[str, Any]] | None = None


#: The reply text, (text, stop reason) to end it otherwise than normally ("length" / "max_tokens": cut at the limit),
#: or a Reply.
Answerer = Callable[[dict[str, Any]], "str | tuple[str, str] | Reply"]


def prompt_text(body: dict[str, Any]) -> str:
    """All text of a request body's messages (and Anthropic's `system`), in order."""
    parts: list[str] = []
    system = body.get("system")
    if isinstance(system, str):
        parts.append(system)
    elif isinstance(system, list):
        parts += [b.get("text", "") for b in system]
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            parts.append(content)
        else:
            parts += [b.get("text", "") for b in content if b.get("type") == "text"]
    return "\n".join(parts)


class FakeLLMServer:
    """A scripted LLM server.

    :param wire: "openai" (POST /v1/chat/completions) or "anthropic" (POST /v1/messages).
    :param answer: the reply text, or a function of the request body returning it (or (text, stop reason)).
    :param faults: consumed one per request, in order, then every request succeeds. Items: "ok", "429" or
        "429:<retry-after>", "500", "503", "529", "400", "slow", "truncated", "empty", "garbage".
    :param delay_s: time each successful answer takes (for concurrency tests).
    :param slow_s: time a "slow" fault waits before answering.
    """

    def __init__(
        self,
        wire: str,
        answer: str | Answerer = "hello",
        faults: list[str] | None = None,
        delay_s: float = 0.0,
        slow_s: float = 2.0,
    ) -> None:
        assert wire in ("openai", "anthropic")
        self.wire = wire
        self.answer: Answerer = answer if callable(answer) else (lambda _b, a=answer: a)
        self.faults: deque[str] = deque(faults or [])
        self.delay_s = delay_s
        self.slow_s = slow_s
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.statuses: list[int] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        root = f"http://127.0.0.1:{self.port}"
        return root + "/v1" if self.wire == "openai" else root

    def __enter__(self) -> FakeLLMServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def _next_fault(self) -> str:
        with self._lock:
            return self.faults.popleft() if self.faults else "ok"

    # wire formats
    def _success(self, body: dict[str, Any], reply: str | tuple[str, str] | Reply | None) -> dict[str, Any]:
        r = reply if isinstance(reply, Reply) else Reply(*reply) if isinstance(reply, tuple) else Reply(reply)
        n_in = len(prompt_text(body).split())
        n_out = len(r.text.split()) if r.text else 0
        model = body.get("model", "?")
        if self.wire == "openai":
            return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": model,
                    "choices": [] if r.text is None and r.parts is None else [self._openai_choice(r)],
                    "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out}}
        return {"id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": self._blocks(r),
                "stop_reason": r.stop or ("tool_use" if r.tool else "end_turn"), "stop_sequence": None,
                "usage": {"input_tokens": n_in, "output_tokens": n_out}}

    @staticmethod
    def _openai_choice(r: Reply) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": r.parts if r.parts is not None else r.text}
        if r.thinking:
            message["reasoning_content"] = r.thinking
        if r.refusal is not None:
            message["refusal"] = r.refusal
        if r.tool:
            message["tool_calls"] = [{"id": "call_1", "type": "function",
                                      "function": {"name": r.tool[0], "arguments": json.dumps(r.tool[1])}}]
        return {"index": 0, "message": message, "finish_reason": r.stop or ("tool_calls" if r.tool else "stop")}

    @staticmethod
    def _blocks(r: Reply) -> list[dict[str, Any]]:
        if r.parts is not None:
            return r.parts
        if r.text is None:
            return []
        blocks: list[dict[str, Any]] = []
        if r.thinking:
            blocks.append({"type": "thinking", "thinking": r.thinking, "signature": "sig"})
        if r.text or r.refusal or not r.tool:
            blocks.append({"type": "text", "text": r.text or r.refusal or ""})
        if r.tool:
            blocks.append({"type": "tool_use", "id": "toolu_1", "name": r.tool[0], "input": r.tool[1]})
        return blocks

    def _error(self, status: int, message: str) -> dict[str, Any]:
        kind = {429: "rate_limit_error", 529: "overloaded_error", 400: "invalid_request_error"}.get(status, "api_error")
        if self.wire == "openai":
            return {"error": {"message": message, "type": kind, "code": None}}
        return {"type": "error", "error": {"type": kind, "message": message}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def _send(self, status: int, payload: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    self.close_connection = True
                with server._lock:
                    server.statuses.append(status)

            def do_POST(self) -> None:  # noqa: N802 (http.server API)
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw or b"{}")
                with server._lock:
                    server.requests.append(body)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    self._respond(body, server._next_fault())
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _respond(self, body: dict[str, Any], fault: str) -> None:
                kind, _, arg = fault.partition(":")
                if kind in ("429", "500", "503", "529", "400"):
                    status = int(kind)
                    headers = {"Retry-After": arg} if arg else {}
                    self._send(status, json.dumps(server._error(status, f"injected {kind}")).encode(), headers)
                    return
                if kind == "slow":
                    time.sleep(server.slow_s)
                elif server.delay_s:
                    time.sleep(server.delay_s)
                payload = json.dumps(server._success(body, None if kind == "empty" else server.answer(body))).encode()
                if kind == "truncated":
                    payload = payload[: len(payload) // 2]
                elif kind == "garbage":
                    payload = b"<html>502 bad gateway</html>"
                self._send(200, payload)

        return Handler
