"""A FakeLLMServer that also does what providers do beyond one answer: a prompt cache whose hits the usage reports
(Anthropic: `cache_control` breakpoints, `cache_read_input_tokens` / `cache_creation_input_tokens`; OpenAI: automatic
prefix caching, `prompt_tokens_details.cached_tokens`), and the batch endpoints (OpenAI: /v1/files, /v1/batches,
the output file's content; Anthropic: /v1/messages/batches and its results). The real SDKs are pointed at it. Tokens
are words, as in FakeLLMServer."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from .fake_servers import FakeLLMServer, prompt_text

__all__ = ["ProviderServer"]


def _blocks(body: dict[str, Any]) -> list[tuple[str, bool]]:
    """(text, carries cache_control) of every block of a request, in the order a provider reads them."""
    out: list[tuple[str, bool]] = []
    system = body.get("system")
    if isinstance(system, str):
        out.append((system, False))
    for b in system if isinstance(system, list) else []:
        out.append((b.get("text", ""), "cache_control" in b))
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            out.append((content, "cache_control" in m))
        else:
            out += [(b.get("text", ""), "cache_control" in b) for b in content if b.get("type") == "text"]
    return out


def _words(text: str) -> list[str]:
    return text.split()


class ProviderServer(FakeLLMServer):
    """:param wire: "openai" or "anthropic".
    :param polls: GETs of a batch that still answer "in progress" before it ends.
    :param min_cached: the shortest prefix (words) a provider caches.
    Counters: `batches_created`, `batch_polls`, `cached_reported` (every usage's cached tokens)."""

    def __init__(self, wire: str, answer: Any = "hello", polls: int = 1, min_cached: int = 1, **kw: Any) -> None:
        super().__init__(wire, answer, **kw)
        self.polls, self.min_cached = polls, min_cached
        self.prefixes: set[tuple[str, ...]] = set()  # Anthropic: cached prefixes
        self.prompts: list[list[str]] = []  # OpenAI: every prompt seen (words), for the longest shared prefix
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.batches_created = 0
        self.batch_polls = 0
        self._cache_lock = threading.Lock()

    # -- the prompt cache -------------------------------------------------------------------------------------
    def _success(self, body: dict[str, Any], reply: Any) -> dict[str, Any]:
        out = super()._success(body, reply)
        with self._cache_lock:
            if self.wire == "anthropic":
                self._anthropic_usage(body, out["usage"])
            else:
                self._openai_usage(body, out["usage"])
        return out

    def _anthropic_usage(self, body: dict[str, Any], usage: dict[str, Any]) -> None:
        blocks = _blocks(body)
        marks = [i for i, (_, cc) in enumerate(blocks) if cc]
        read = written = 0
        if marks:
            prefix = tuple(w for text, _ in blocks[: marks[-1] + 1] for w in _words(text))
            if len(prefix) >= self.min_cached:
                if prefix in self.prefixes:
                    read = len(prefix)
                else:
                    written = len(prefix)
                    self.prefixes.add(prefix)
        usage.update(input_tokens=usage["input_tokens"] - read - written, cache_read_input_tokens=read,
                     cache_creation_input_tokens=written)

    def _openai_usage(self, body: dict[str, Any], usage: dict[str, Any]) -> None:
        words = _words(prompt_text(body))
        shared = 0
        for seen in self.prompts:
            n = 0
            for a, b in zip(seen, words, strict=False):
                if a != b:
                    break
                n += 1
            shared = max(shared, n)
        self.prompts.append(words)
        cached = shared if shared >= self.min_cached else 0
        usage["prompt_tokens_details"] = {"cached_tokens": cached}

    # -- batches ----------------------------------------------------------------------------------------------
    def _answer_one(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self.requests.append(body)
        return self._success(body, self.answer(body))

    def _create_openai(self, payload: dict[str, Any]) -> dict[str, Any]:
        lines = [json.loads(x) for x in self.files[payload["input_file_id"]].decode().splitlines() if x.strip()]
        out = [{"id": f"batch_req_{i}", "custom_id": line["custom_id"],
                "response": {"status_code": 200, "request_id": f"req_{i}", "body": self._answer_one(line["body"])},
                "error": None} for i, line in enumerate(lines)]
        n = len(self.batches) + 1
        self.files[f"file-out{n}"] = "".join(json.dumps(x) + "\n" for x in out).encode()
        return {"id": f"batch_{n}", "object": "batch", "endpoint": payload["endpoint"], "errors": None,
                "input_file_id": payload["input_file_id"], "completion_window": "24h", "status": "in_progress",
                "output_file_id": None, "error_file_id": None, "created_at": int(time.time()),
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0}, "_output": f"file-out{n}"}

    def _create_anthropic(self, payload: dict[str, Any]) -> dict[str, Any]:
        n = len(self.batches) + 1
        results = [{"custom_id": r["custom_id"],
                    "result": {"type": "succeeded", "message": self._answer_one(r["params"])}}
                   for r in payload["requests"]]
        self.files[f"results{n}"] = "".join(json.dumps(x) + "\n" for x in results).encode()
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return {"id": f"msgbatch_{n}", "type": "message_batch", "processing_status": "in_progress",
                "request_counts": {"processing": len(results), "succeeded": 0, "errored": 0, "canceled": 0,
                                   "expired": 0},
                "ended_at": None, "created_at": now, "expires_at": now, "cancel_initiated_at": None,
                "archived_at": None, "results_url": None, "_output": f"results{n}"}

    def _poll(self, batch: dict[str, Any]) -> dict[str, Any]:
        self.batch_polls += 1
        batch["_polls"] = batch.get("_polls", 0) + 1
        if batch["_polls"] > self.polls:
            if self.wire == "openai":
                batch.update(status="completed", output_file_id=batch["_output"])
                batch["request_counts"]["completed"] = batch["request_counts"]["total"]
            else:
                batch.update(processing_status="ended",
                             results_url=f"http://127.0.0.1:{self.port}/v1/messages/batches/{batch['id']}/results")
                batch["request_counts"]["succeeded"] = batch["request_counts"]["processing"]
                batch["request_counts"]["processing"] = 0
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self
        base = super()._handler()

        class Handler(base):  # type: ignore[misc, valid-type]
            def _json(self, payload: Any, status: int = 200) -> None:
                self._send(status, json.dumps(payload).encode())

            def do_POST(self) -> None:  # noqa: N802
                path = self.path.split("?")[0]
                if path.endswith("/files"):
                    raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                    content = raw.split(b"\r\n\r\n", 2)[-1] if b'name="file"' not in raw else \
                        raw[raw.index(b'name="file"'):].split(b"\r\n\r\n", 1)[1].rsplit(b"\r\n--", 1)[0]
                    fid = f"file-in{len(server.files) + 1}"
                    server.files[fid] = content
                    self._json({"id": fid, "object": "file", "bytes": len(content), "created_at": int(time.time()),
                                "filename": "batch.jsonl", "purpose": "batch", "status": "processed"})
                elif path.endswith("/batches"):
                    payload = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                    batch = server._create_openai(payload) if server.wire == "openai" else \
                        server._create_anthropic(payload)
                    server.batches[batch["id"]] = batch
                    server.batches_created += 1
                    self._json({k: v for k, v in batch.items() if not k.startswith("_")})
                else:
                    super().do_POST()

            def do_GET(self) -> None:  # noqa: N802
                parts = self.path.split("?")[0].rstrip("/").split("/")
                if parts[-1] == "content" and parts[-2] in server.files:  # OpenAI: GET /v1/files/{id}/content
                    self._send(200, server.files[parts[-2]])
                elif parts[-1] == "results" and parts[-2] in server.batches:  # Anthropic: the results JSONL
                    self._send(200, server.files[server.batches[parts[-2]]["_output"]])
                elif parts[-1] in server.batches:
                    self._json(server._poll(server.batches[parts[-1]]))
                else:
                    self._json({"error": {"message": f"no {self.path}"}}, 404)

        return Handler
