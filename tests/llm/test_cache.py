"""Response cache: modes, content addressing, replay without network or key, concurrent writers."""

from __future__ import annotations

import json
import multiprocessing as mp
import threading
from pathlib import Path

import pytest

from bird.config.schema import LLMConfig
from bird.llm.base import LLMError, Message, Request
from bird.llm.cache import CachingGenerator, ReplayMissError, ResponseCache
from bird.llm.factory import make_generator

from .conftest import llm_cfg, no_budget
from .fake_servers import FakeLLMServer


def _req(i: int = 0, seed: int = 0, text: str = "write a reward") -> Request:
    return Request(purpose="reward", messages=(Message("user", text),), sample_index=i, seed=seed)


def _counter_answer(body: dict) -> str:
    _counter_answer.n += 1  # type: ignore[attr-defined]
    return f"answer {_counter_answer.n}"  # type: ignore[attr-defined]


@pytest.fixture
def counting_server(wire):
    _counter_answer.n = 0  # type: ignore[attr-defined]
    with FakeLLMServer(wire, _counter_answer) as srv:
        yield srv


def _gen(wire, srv, tmp_path, mode, **kw):
    return make_generator(llm_cfg(wire, srv, tmp_path, cache=mode, **kw), no_budget(), tmp_path / "j.jsonl")


def test_readwrite_serves_a_repeat_from_disk_at_zero_cost(wire, with_key, counting_server, tmp_path):
    gen = _gen(wire, counting_server, tmp_path, "readwrite", price_per_mtok={"input": 1.0, "output": 1.0})
    first, again = gen.complete(_req()), gen.complete(_req())
    assert len(counting_server.requests) == 1
    assert again.text == first.text and again.cached and not first.cached
    assert again.cost_usd == 0.0 and again.uncached_cost_usd == first.cost_usd > 0
    assert (again.input_tokens, again.output_tokens) == (first.input_tokens, first.output_tokens)


@pytest.mark.parametrize(
    "other",
    [_req(i=1), _req(seed=1), _req(text="write a better reward"), Request("reward", (Message("user", "write a reward"),),
                                                                      temperature=0.5),
     Request("reward", (Message("user", "write a reward"),), max_tokens=512),
     Request("reward", (Message("user", "write a reward", images=(b"\x89PNG frame",)),))],
    ids=["sample_index", "seed", "messages", "temperature", "max_tokens", "images"],
)
def test_cache_misses_when_any_keyed_field_differs(wire, with_key, counting_server, tmp_path, other):
    gen = _gen(wire, counting_server, tmp_path, "readwrite")
    a, b = gen.complete(_req()), gen.complete(other)
    assert a.text != b.text and not b.cached
    assert len(counting_server.requests) == 2


def test_a_judge_asked_about_new_frames_gets_a_new_verdict(wire, with_key, counting_server, tmp_path):
    def judge(frame: bytes) -> Request:
        return Request("judge", (Message("user", "did the robot open the drawer?", images=(frame,)),))

    gen = _gen(wire, counting_server, tmp_path, "readwrite")
    first, same = gen.complete(judge(b"\x89PNG frame A")), gen.complete(judge(b"\x89PNG frame A"))
    other = gen.complete(judge(b"\x89PNG frame B"))
    assert same.cached and same.text == first.text
    assert not other.cached and other.text != first.text
    assert len(counting_server.requests) == 2


def test_cache_is_shared_across_generators_but_not_models(wire, with_key, counting_server, tmp_path):
    _gen(wire, counting_server, tmp_path, "readwrite").complete(_req())
    assert _gen(wire, counting_server, tmp_path, "readwrite").complete(_req()).cached
    assert not _gen(wire, counting_server, tmp_path, "readwrite", model="other").complete(_req()).cached


def test_record_always_calls_and_overwrites(wire, with_key, counting_server, tmp_path):
    _gen(wire, counting_server, tmp_path, "readwrite").complete(_req())
    rec = _gen(wire, counting_server, tmp_path, "record").complete(_req())
    assert rec.text == "answer 2" and not rec.cached
    assert _gen(wire, counting_server, tmp_path, "readwrite").complete(_req()).text == "answer 2"


def test_off_neither_reads_nor_writes(wire, with_key, counting_server, tmp_path):
    gen = _gen(wire, counting_server, tmp_path, "off")
    assert gen.complete(_req()).text != gen.complete(_req()).text
    assert not (tmp_path / "cache").exists()


def test_replay_serves_recorded_answers_with_server_stopped_and_no_key(wire, with_key, tmp_path, monkeypatch):
    with FakeLLMServer(wire, "recorded") as srv:
        url = srv.base_url
        _gen(wire, srv, tmp_path, "record").complete(_req())
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    cfg = llm_cfg(wire, None, tmp_path, cache="replay", base_url=url)
    gen = make_generator(cfg, no_budget())
    r = gen.complete(_req())
    assert r.text == "recorded" and r.cached


def test_replay_keeps_the_stop_reason_so_a_cut_answer_is_cut_again(wire, with_key, tmp_path, monkeypatch):
    stop = {"openai": "length", "anthropic": "max_tokens"}[wire]
    with FakeLLMServer(wire, lambda body: ("half a progr", stop)) as srv:
        url = srv.base_url
        recorded = _gen(wire, srv, tmp_path, "record").complete(_req())
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    replayed = make_generator(llm_cfg(wire, None, tmp_path, cache="replay", base_url=url), no_budget()).complete(_req())
    assert replayed.cached and replayed.text == recorded.text
    assert replayed.finish_reason == recorded.finish_reason == stop and replayed.truncated


def test_replay_miss_names_the_request_and_makes_no_call(wire, with_key, counting_server, tmp_path):
    gen = _gen(wire, counting_server, tmp_path, "replay")
    with pytest.raises(ReplayMissError, match=r"purpose=reward sample_index=3 seed=7 .*'write a reward'"):
        gen.complete(_req(i=3, seed=7))
    assert counting_server.requests == []


def test_replay_miss_is_not_swallowed_by_complete_many(wire, with_key, counting_server, tmp_path):
    gen = _gen(wire, counting_server, tmp_path, "replay")
    with pytest.raises(ReplayMissError):  # stops the search instead of recording an llm_error
        gen.complete_many([_req(0), _req(1)])


def test_failed_calls_are_not_cached(wire, with_key, tmp_path):
    with FakeLLMServer(wire, "ok", faults=["400"]) as srv:
        gen = _gen(wire, srv, tmp_path, "readwrite")
        with pytest.raises(LLMError):
            gen.complete(_req())
        assert not gen.complete(_req()).cached


def test_unknown_cache_mode_is_rejected_with_allowed_values(tmp_path):
    with pytest.raises(ValueError, match=r"llm.cache='sometimes'; allowed: \['off', 'readwrite', 'record', 'replay'\]"):
        make_generator(llm_cfg("openai", None, tmp_path, cache="sometimes"), no_budget())


def test_offline_generator_is_not_put_behind_the_cache(tmp_path):
    gen = make_generator(LLMConfig(backend="offline", cache="readwrite", cache_dir=str(tmp_path)), no_budget())
    assert not isinstance(gen.inner, CachingGenerator)  # its answers depend on context/seed, not on the key


# concurrent writers


def _writer(root: str, key: str, tag: int, n: int) -> None:
    cache = ResponseCache(root)
    for i in range(n):
        cache.put(key, {"response": {"text": f"{tag}-{i}", "pad": "x" * 20_000}})


def test_concurrent_writers_of_one_key_leave_one_whole_entry(tmp_path):
    key = "ab" + "0" * 62
    root = str(tmp_path / "cache")
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(root, key, tag, 40)) for tag in range(3)]
    bad: list[str] = []
    stop = threading.Event()

    def reader() -> None:
        cache = ResponseCache(root)
        while not stop.is_set():
            path = cache.path(key)
            if path.exists():
                try:
                    entry = json.loads(path.read_text())
                except FileNotFoundError:
                    continue
                except ValueError as exc:  # a torn write would show up here
                    bad.append(str(exc))
                else:
                    if len(entry["response"]["pad"]) != 20_000:
                        bad.append("short")

    t = threading.Thread(target=reader)
    t.start()
    for p in procs:
        p.start()
    threads = [threading.Thread(target=_writer, args=(root, key, 10 + k, 40)) for k in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    stop.set()
    t.join()
    assert bad == []
    entry = ResponseCache(root).get(key)
    assert entry is not None and entry["response"]["text"].endswith("-39")
    assert [p.name for p in Path(root, "ab").iterdir()] == [f"{key}.json"]  # no temporary files left


def test_unreadable_entry_counts_as_a_miss(tmp_path):
    cache = ResponseCache(tmp_path)
    key = "cd" + "1" * 62
    cache.path(key).parent.mkdir(parents=True)
    cache.path(key).write_text("{not json")
    assert cache.get(key) is None
