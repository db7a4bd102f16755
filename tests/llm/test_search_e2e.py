"""A whole Eureka smoke search with llm=openai against a local OpenAI-compatible server that injects transient
faults, then the same search replayed from the cache with the server stopped: identical candidates and result."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from .fake_servers import FakeLLMServer, Reply

pytestmark = pytest.mark.slow

PROGRAM = """Here is a reward function.

```python
import numpy as np


def compute_reward(obs, action, next_obs, info):
    forward = next_obs['rootx_vel']
    ctrl = -{w} * np.sum(np.square(action), axis=-1)
    alive = {a} * np.ones(len(action))
    reward = forward + ctrl + alive
    return reward, {{'forward': forward, 'ctrl': ctrl, 'alive': alive}}
```
"""

# result.json / candidate.json keys that describe this execution, not the search (see docs/llm.md, "Replay")
_RESULT_EXEC = {"wall_s", "llm_cached_calls", "cost_usd", "config_hash"}
_CAND_EXEC = {"wall_s"}
_LLM_EXEC = {"latency_s", "cached", "cost_usd", "attempts", "uncached_cost_usd"}


class _Programs:
    """The n-th answer: a valid program with slightly different weights (n = arrival order)."""

    def __init__(self) -> None:
        self.n = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        with self.lock:
            self.n += 1
            n = self.n
        return PROGRAM.format(w=round(0.001 * n, 4), a=round(0.05 * (n % 3), 2))


def _search(run_dir: Path, overrides: list[str]) -> dict[str, Any]:
    from bird.config.load import compose
    from bird.loop import search

    fast = ["budget.env_steps=1024", "final.retrain=false", "video.record=none"]  # smoke, smaller, no clip
    cfg = compose(["budget=smoke", "run.progress=false", *fast, *overrides])
    return search(cfg, run_dir)


def _candidates(run_dir: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for path in sorted((run_dir / "candidates").glob("*/candidate.json")):
        row = {k: v for k, v in json.loads(path.read_text()).items() if k not in _CAND_EXEC}
        if isinstance(row.get("llm"), dict):
            row["llm"] = {k: v for k, v in row["llm"].items() if k not in _LLM_EXEC}
        row["reward.py"] = (path.parent / "reward.py").read_text() if (path.parent / "reward.py").exists() else None
        out[path.parent.name] = row
    return out


def test_smoke_search_survives_faults_and_replays_identically_without_server(tmp_path, monkeypatch):
    pytest.importorskip("openai")
    faults = ["429:0.05", "500", "truncated", "529", "slow"]
    with FakeLLMServer("openai", _Programs(), faults=faults, slow_s=1.5) as srv:
        common = [
            "llm=openai", f"llm.base_url={srv.base_url}", "llm.model=any", f"llm.cache_dir={tmp_path / 'cache'}",
            "llm.retry_base_s=0.01", "llm.timeout_s=1.0", "llm.price_per_mtok={input: 1.0, output: 2.0}",
            "llm.reasoning_effort=medium",
        ]
        recorded = _search(tmp_path / "record", [*common, "llm.cache=record"])
        n_requests = len(srv.requests)
        assert {r["reasoning_effort"] for r in srv.requests} == {"medium"}
    assert recorded["status"] == "completed" and recorded["n_failed"] == 0
    assert recorded["generator"]["provider"] == "openai" and recorded["generator"]["reasoning_effort"] == "medium"
    assert recorded["judge"] is None  # eureka builds no judge
    assert recorded["llm_calls"] == 4 and recorded["cost_usd"] > 0
    assert n_requests == 4 + len(faults)  # every fault was retried, none reached a candidate
    journal = [json.loads(x) for x in (tmp_path / "record" / "llm_calls.jsonl").read_text().splitlines()]
    assert sum(x["attempts"] - 1 for x in journal) == len(faults)
    assert {(x["reasoning_effort"], x["temperature"]) for x in journal} == {("medium", 1.0)}

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # server stopped, no key: replay only
    replayed = _search(tmp_path / "replay", [*common, "llm.cache=replay"])
    assert replayed["llm_cached_calls"] == 4 and replayed["cost_usd"] == 0.0
    strip = lambda r: {k: v for k, v in r.items() if k not in _RESULT_EXEC}  # noqa: E731
    assert strip(replayed) == strip(recorded)
    assert _candidates(tmp_path / "replay") == _candidates(tmp_path / "record")


class _Shapes:
    """Answers by arrival order (llm.max_concurrency=1): iteration 1 = a cut answer, a program, the cut one's re-ask;
    iteration 2 = the new program followed by the parent's code quoted back, then an answer cut twice."""

    CUT = ("I will reward forward motion.\n\n```python\nimport numpy as np\n\n\ndef compute_reward(obs, action, "
           "next_obs, info):\n    forward = next_obs['rootx_v", "length")

    def __init__(self) -> None:
        self.n = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str | tuple[str, str]:
        with self.lock:
            self.n += 1
            n = self.n
        if n in (1, 5, 6):
            return self.CUT
        if n == 4:
            parent = [m["content"] for m in body["messages"] if m["role"] == "assistant"][-1]
            quoted = parent[parent.index("```python"):]
            return PROGRAM.format(w=0.004, a=0.4) + "\nFor comparison, your previous function:\n\n" + quoted
        return PROGRAM.format(w=round(0.001 * n, 4), a=round(0.1 * n, 2))


def _program(answer: str) -> str:
    return answer[answer.index("```python\n") + 10 : answer.index("```\n", answer.index("```python\n") + 10)]


def test_a_search_trains_the_new_code_of_a_quoting_answer_and_records_a_cut_one(tmp_path):
    pytest.importorskip("openai")
    with FakeLLMServer("openai", _Shapes()) as srv:
        result = _search(tmp_path / "run", ["llm=openai", f"llm.base_url={srv.base_url}", "llm.model=any",
                                            "llm.cache=off", "llm.max_concurrency=1"])
    assert result["status"] == "completed" and result["llm_calls"] == 6
    assert result["failures"] == {"truncated": 1}
    cands = _candidates(tmp_path / "run")
    first = cands["it1-c0"]  # cut, re-asked once with the note, then trained
    assert first["status"] == "trained" and first["attempts"] == 2 and first["resampled"][0]["kind"] == "truncated"
    assert first["reward.py"] == _program(PROGRAM.format(w=0.003, a=0.3))
    quoting = cands["it2-c0"]  # trained the new code, not the parent's quoted after it
    assert quoting["status"] == "trained" and quoting["reward.py"] == _program(PROGRAM.format(w=0.004, a=0.4))
    assert quoting["reward.py"] != cands[quoting["parent_id"]]["reward.py"]
    cut = cands["it2-c1"]  # cut twice: recorded, never compiled
    assert cut["failure"]["kind"] == "truncated" and cut["reward.py"] is None and cut["attempts"] == 2
    assert not (tmp_path / "run" / "candidates" / "it2-c1" / "verify.json").exists()


class _ToolCalls:
    """Answers every request that offers the answer tool with a call holding a program, and text otherwise."""

    def __init__(self) -> None:
        self.n = 0
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply | str:
        with self.lock:
            self.n += 1
            n = self.n
        code = _program(PROGRAM.format(w=round(0.001 * n, 4), a=round(0.1 * n, 2)))
        if not body.get("tools"):
            return PROGRAM.format(w=0.0, a=0.0)
        return Reply("A draft, not the answer:\n```python\ndef compute_reward(o, a, n, i):\n    return 0.0, {}\n```",
                     tool=(body["tools"][0].get("name") or body["tools"][0]["function"]["name"], {"code": code}))


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_a_tool_answer_search_completes_against_each_wire_and_trains_the_calls_argument(wire, tmp_path):
    """+choice=tool_answer: the request carries the tool in the wire's own form and makes the model call it; the
    program is the call's argument (the draft in the text is never read); result.json labels the addition."""
    pytest.importorskip(wire)
    with FakeLLMServer(wire, _ToolCalls()) as srv:
        result = _search(tmp_path / "run", [f"llm={wire}", f"llm.base_url={srv.base_url}", "llm.model=any",
                                            "llm.cache=off", "+choice=tool_answer", "budget.max_iterations=1"])
        bodies = srv.requests
    assert result["status"] == "completed" and result["n_failed"] == 0
    assert any("generate.answer_form=tool" in s for s in result["substitutes"])
    tool_choice = {"openai": {"type": "function", "function": {"name": "submit_reward_program"}},
                   "anthropic": {"type": "tool", "name": "submit_reward_program"}}[wire]
    assert bodies and all(b["tool_choice"] == tool_choice for b in bodies)
    schema = bodies[0]["tools"][0]["input_schema" if wire == "anthropic" else "function"]
    assert "code" in str(schema)
    for cand in _candidates(tmp_path / "run").values():
        assert cand["status"] == "trained" and "return 0.0, {}" not in cand["reward.py"]
        assert cand["llm"]["tool_calls"][0]["name"] == "submit_reward_program"
