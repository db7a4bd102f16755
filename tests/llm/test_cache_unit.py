"""The response cache's own rules, without a server: where entries live, what an entry records, what a hit returns,
how the generator it wraps is consulted, and what a replay miss says. The generator double stands in for an LLM."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from bird.llm.base import Generator, LLMError, Message, Request, Response
from bird.llm.cache import CachingGenerator, ReplayMissError, ResponseCache, default_cache_dir, is_key

KEY = "ab" + "c" * 62


class CountingLLM(Generator):
    """Answers "answer <n>"; its prepare() pins the temperature, as a backend with llm.temperature set does."""

    provider, label, cacheable = "counting", "a test double", True

    def __init__(self) -> None:
        super().__init__("m-1", max_concurrency=3)
        self.calls = 0
        self.seen: list[Request] = []

    def prepare(self, request: Request) -> Request:
        return replace(request, temperature=0.25)

    def cache_provider(self) -> str:
        return "counting@local"

    def complete(self, request: Request) -> Response:
        self.calls += 1
        self.seen.append(request)
        return Response(f"answer {self.calls}", "m-1-served", input_tokens=11, output_tokens=7, cost_usd=0.5,
                        latency_s=1.5, finish_reason="stop", attempts=2)


def _req(text: str = "write a reward", **kw) -> Request:
    msgs = (Message("system", "be brief"), Message("user", text, images=(b"png",)))
    return Request("reward", msgs, {"task": "t"}, **kw)


def test_default_cache_dir_prefers_bird_cache_dir_then_xdg_then_home(monkeypatch, tmp_path):
    monkeypatch.setenv("BIRD_CACHE_DIR", str(tmp_path / "bird"))
    assert default_cache_dir() == tmp_path / "bird"
    monkeypatch.delenv("BIRD_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "xdg" / "bird" / "llm"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "bird" / "llm"
    assert ResponseCache().root == default_cache_dir()
    assert ResponseCache(tmp_path / "x").path(KEY) == tmp_path / "x" / "ab" / f"{KEY}.json"


def test_put_then_get_round_trips_and_other_formats_are_misses(tmp_path):
    cache = ResponseCache(tmp_path)
    assert cache.get(KEY) is None
    cache.put(KEY, {"response": {"text": "hi"}})
    assert cache.get(KEY) == {"format": 1, "key": KEY, "response": {"text": "hi"}}
    cache.path(KEY).write_text(json.dumps({"format": 2, "response": {}}))
    assert cache.get(KEY) is None
    cache.path(KEY).write_text(json.dumps([1, 2]))
    assert cache.get(KEY) is None


def test_a_failed_write_leaves_no_entry_and_no_temporary_file(tmp_path):
    cache = ResponseCache(tmp_path)
    with pytest.raises(TypeError):
        cache.put(KEY, {"response": {"text": object()}})
    assert list((tmp_path / "ab").iterdir()) == []


def test_the_wrapper_looks_like_the_generator_it_wraps(tmp_path):
    inner = CountingLLM()
    gen = CachingGenerator(inner, ResponseCache(tmp_path))
    assert (gen.model, gen.max_concurrency, gen.provider, gen.label, gen.cacheable) == ("m-1", 3, "counting",
                                                                                        "a test double", True)
    assert gen.cache_provider() == "counting@local" and gen.describe() == inner.describe()
    assert gen.prepare(_req(temperature=0.9)).temperature == 0.25
    assert gen.mode == "readwrite"


def test_an_entry_records_the_prepared_request_and_the_answer(tmp_path):
    inner = CountingLLM()
    gen = CachingGenerator(inner, ResponseCache(tmp_path))
    request = _req(temperature=0.9, max_tokens=300, sample_index=2, seed=5)
    first = gen.complete(request)
    assert first.text == "answer 1" and not first.cached and first.attempts == 2
    key = inner.prepare(request).key("counting@local", "m-1")
    entry = json.loads((tmp_path / key[:2] / f"{key}.json").read_text())
    assert entry["provider"] == "counting@local" and entry["model"] == "m-1" and entry["key"] == key
    assert entry["request"] == {"purpose": "reward", "messages": [
        {"role": "system", "content": "be brief", "n_images": 0}, {"role": "user", "content": "write a reward",
                                                                   "n_images": 1}],
        "temperature": 0.25, "max_tokens": 300, "sample_index": 2, "seed": 5,
        "image_sha256": [[], [hashlib.sha256(b"png").hexdigest()]]}  # what the key is made from: verify recomputes it
    assert entry["response"] == {"text": "answer 1", "model": "m-1-served", "input_tokens": 11, "output_tokens": 7,
                                 "cost_usd": 0.5, "finish_reason": "stop"}
    assert isinstance(entry["created"], float)


def test_a_hit_is_free_instant_and_marked_and_the_key_uses_the_prepared_request(tmp_path):
    inner = CountingLLM()
    gen = CachingGenerator(inner, ResponseCache(tmp_path))
    gen.complete(_req(temperature=0.9))
    hit = gen.complete(_req(temperature=0.1))  # prepare() pins both to 0.25: the same request as sent
    assert inner.calls == 1
    assert hit == Response("answer 1", "m-1-served", input_tokens=11, output_tokens=7, cost_usd=0.0, latency_s=0.0,
                           cached=True, finish_reason="stop", attempts=0, uncached_cost_usd=0.5)
    entry_path = next(Path(tmp_path).rglob("*.json"))
    entry = json.loads(entry_path.read_text())
    del entry["response"]["finish_reason"]  # entries written before finish_reason existed still load
    entry_path.write_text(json.dumps(entry))
    assert gen.complete(_req()).finish_reason == ""


@pytest.mark.parametrize("mode, calls, stored", [("off", 2, False), ("record", 2, True), ("readwrite", 1, True)])
def test_modes_decide_whether_to_read_and_write(tmp_path, mode, calls, stored):
    inner = CountingLLM()
    gen = CachingGenerator(inner, ResponseCache(tmp_path / "c"), mode)
    texts = [gen.complete(_req()).text for _ in range(2)]
    assert inner.calls == calls and texts == (["answer 1", "answer 1"] if calls == 1 else ["answer 1", "answer 2"])
    assert (tmp_path / "c").exists() is stored


def test_replay_serves_hits_and_names_a_miss_without_calling(tmp_path):
    inner = CountingLLM()
    CachingGenerator(inner, ResponseCache(tmp_path), "record").complete(_req())
    replay = CachingGenerator(inner, ResponseCache(tmp_path), "replay")
    assert replay.complete(_req()).cached and inner.calls == 1
    long = "reach   the\n goal " + "x" * 200
    key = inner.prepare(_req(long, sample_index=4, seed=9)).key("counting@local", "m-1")
    with pytest.raises(ReplayMissError) as err:
        replay.complete(_req(long, sample_index=4, seed=9))
    assert inner.calls == 1
    head = ("reach the goal " + "x" * 200)[:120]
    assert str(err.value) == (
        f"llm.cache=replay: no cached answer for purpose=reward sample_index=4 seed=9 provider=counting@local "
        f"model=m-1 (key {key[:16]}..., cache {tmp_path}); prompt starts {head!r}. "
        "Replay needs the same config, seed and cache directory as the recorded run.")


def test_an_unknown_mode_is_rejected_listing_the_modes(tmp_path):
    with pytest.raises(ValueError, match=r"^llm.cache='sometimes'; allowed: \['off', 'readwrite', 'record', 'replay'\]$"):
        CachingGenerator(CountingLLM(), ResponseCache(tmp_path), "sometimes")


@pytest.mark.parametrize("mode", ["off", "readwrite"])
def test_the_wrapped_generator_gets_the_prepared_request(tmp_path, mode):
    inner = CountingLLM()
    CachingGenerator(inner, ResponseCache(tmp_path), mode).complete(_req(temperature=0.9))
    assert [r.temperature for r in inner.seen] == [0.25] and inner.seen[0].messages == _req().messages


def test_entries_are_written_through_a_hidden_temporary_file_beside_them(tmp_path, monkeypatch):
    import bird.llm.cache as cache_module

    moves = []
    real_replace = cache_module.os.replace
    monkeypatch.setattr(cache_module.os, "replace", lambda a, b: (moves.append((Path(a), Path(b))), real_replace(a, b)))
    cache = ResponseCache(tmp_path)
    cache.put(KEY, {"response": {"text": "é"}})
    [(tmp, target)] = moves
    assert target == cache.path(KEY) and tmp.parent == target.parent
    assert tmp.name.startswith(f".{KEY}.json.") and tmp.name.endswith(".tmp") and not tmp.exists()  # bird/files.py
    text = target.read_text(encoding="utf-8")
    assert text.startswith('{\n "format": 1,\n "key": ') and r"\u00e9" in text  # indent 1, ASCII-escaped


def test_a_replay_miss_without_a_user_message_says_the_prompt_is_empty(tmp_path):
    replay = CachingGenerator(CountingLLM(), ResponseCache(tmp_path), "replay")
    with pytest.raises(ReplayMissError, match="prompt starts ''. Replay needs"):
        replay.complete(Request("judge", (Message("system", "only a system message"),)))


def test_only_64_lowercase_hex_digits_make_a_key_and_a_path(tmp_path):
    cache = ResponseCache(tmp_path)
    for bad in ("../../" + KEY[6:], KEY.upper(), KEY[:-1], KEY + "0"):
        assert not is_key(bad) and cache.get(bad) is None
    assert not is_key(12) and not is_key(None) and is_key(KEY)
    long = "../" + "z" * 100
    with pytest.raises(ValueError) as err:
        cache.path(long)
    assert str(err.value) == (f"response cache key {long[:80]!r} is not a request key (64 lowercase hex digits)")


def test_a_link_to_an_entry_elsewhere_in_the_cache_is_read(tmp_path):
    cache = ResponseCache(tmp_path)
    other = tmp_path / "elsewhere" / "entry.json"
    other.parent.mkdir()
    other.write_text(json.dumps({"format": 1, "response": {"text": "linked"}}))
    cache.path(KEY).parent.mkdir()
    cache.path(KEY).symlink_to(other)
    assert cache.get(KEY) == {"format": 1, "response": {"text": "linked"}}


def test_an_entry_is_synced_to_disk_with_its_folder(tmp_path, monkeypatch):
    import os

    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.readlink(f"/proc/self/fd/{fd}")), real_fsync(fd)))
    cache = ResponseCache(tmp_path)
    cache.put(KEY, {"response": {"text": "hi"}})
    assert len(synced) == 2 and Path(synced[0]).parent == cache.path(KEY).parent
    assert synced[1] == str(cache.path(KEY).parent)


class SetAsideLLM(CountingLLM):
    """Answers with thinking, a refusal, tool calls, set-aside parts and prompt-cache token counts."""

    def complete(self, request: Request) -> Response:
        self.calls += 1
        return Response("answer", "m-1", input_tokens=30, output_tokens=4, cost_usd=0.2, finish_reason="stop",
                        thinking="let me think", refusal="no can do", tool_calls=({"name": "f", "arguments": "{}"},),
                        set_aside=("an image part",), cached_input_tokens=20, cache_write_tokens=5)


def test_what_was_set_aside_and_the_prompt_cache_counts_are_stored_and_served_back(tmp_path):
    inner = SetAsideLLM()
    gen = CachingGenerator(inner, ResponseCache(tmp_path))
    first = gen.complete(_req())
    entry = json.loads(next(Path(tmp_path).rglob("*.json")).read_text())
    assert entry["response"] == {"text": "answer", "model": "m-1", "input_tokens": 30, "output_tokens": 4,
                                 "cost_usd": 0.2, "finish_reason": "stop", "cached_input_tokens": 20,
                                 "cache_write_tokens": 5, "thinking": "let me think", "refusal": "no can do",
                                 "tool_calls": [{"name": "f", "arguments": "{}"}], "set_aside": ["an image part"]}
    hit = gen.complete(_req())
    assert inner.calls == 1
    assert hit == replace(first, cost_usd=0.0, latency_s=0.0, cached=True, attempts=0, uncached_cost_usd=0.2)


def test_a_replay_miss_carries_the_request_its_key_provider_and_model(tmp_path):
    inner = CountingLLM()
    with pytest.raises(ReplayMissError) as err:
        CachingGenerator(inner, ResponseCache(tmp_path), "replay").complete(_req(temperature=0.9))
    sent = inner.prepare(_req())
    assert err.value.request == sent and err.value.key == sent.key("counting@local", "m-1")
    assert (err.value.provider, err.value.model) == ("counting@local", "m-1")
    bare = ReplayMissError("missing")
    assert (bare.request, bare.key, bare.provider, bare.model) == (None, "", "", "")


class BatchLLM(CountingLLM):
    """A batched backend (llm.mode=batch): one complete_many call per wave; a request whose text says "fail" comes
    back as an LLMError in its place; `drop` answers fewer requests than asked."""

    batched = True

    def __init__(self, drop: bool = False) -> None:
        super().__init__()
        self.batches: list[list[Request]] = []
        self.drop = drop

    def complete(self, request: Request) -> Response:
        raise AssertionError("a batched backend is asked in batches")

    def complete_many(self, requests):
        self.batches.append(list(requests))
        out = [LLMError("refused") if "fail" in r.messages[-1].content else
               Response(f"batch {len(self.batches)} {r.messages[-1].content}", "m-1", cost_usd=0.1)
               for r in requests]
        return out[:-1] if self.drop else out


def test_a_batch_serves_hits_from_the_cache_and_sends_the_misses_in_one_call(tmp_path):
    inner = BatchLLM()
    gen = CachingGenerator(inner, ResponseCache(tmp_path))
    gen.complete_many([_req("b")])
    got = gen.complete_many([_req("a", temperature=0.9), _req("b"), _req("fail"), _req("c")])
    assert [r.text if isinstance(r, Response) else str(r) for r in got] == [
        "batch 2 a", "batch 1 b", "refused", "batch 2 c"]
    assert [r.cached for r in got if isinstance(r, Response)] == [False, True, False]
    assert isinstance(got[2], LLMError)
    assert [[r.messages[-1].content for r in b] for b in inner.batches] == [["b"], ["a", "fail", "c"]]
    assert {r.temperature for b in inner.batches for r in b} == {0.25}  # the prepared requests are sent
    cache = ResponseCache(tmp_path)
    for text, stored in (("a", "batch 2 a"), ("c", "batch 2 c")):
        key = inner.prepare(_req(text)).key("counting@local", "m-1")
        assert cache.get(key)["response"]["text"] == stored
        assert cache.get(key)["request"] == inner.prepare(_req(text)).record()
    assert cache.get(inner.prepare(_req("fail")).key("counting@local", "m-1")) is None  # failures are not cached
    assert len(list(Path(tmp_path).rglob("*.json"))) == 3


@pytest.mark.parametrize("mode, second, stored", [("off", "batch 2 b", 0), ("record", "batch 2 b", 1)])
def test_a_batch_in_off_or_record_mode_asks_again(tmp_path, mode, second, stored):
    inner = BatchLLM()
    gen = CachingGenerator(inner, ResponseCache(tmp_path), mode)
    assert [r.text for r in gen.complete_many([_req("b")])] == ["batch 1 b"]
    assert [r.text for r in gen.complete_many([_req("b")])] == [second]
    entries = list(Path(tmp_path).rglob("*.json"))
    assert len(entries) == stored
    if stored:
        assert json.loads(entries[0].read_text())["response"]["text"] == second  # record overwrites


def test_a_batch_in_replay_mode_serves_hits_and_stops_at_the_first_miss(tmp_path):
    inner = BatchLLM()
    CachingGenerator(inner, ResponseCache(tmp_path), "record").complete_many([_req("a")])
    replay = CachingGenerator(inner, ResponseCache(tmp_path), "replay")
    assert [(r.text, r.cached) for r in replay.complete_many([_req("a")])] == [("batch 1 a", True)]
    with pytest.raises(ReplayMissError) as err:
        replay.complete_many([_req("a"), _req("new one", sample_index=3, seed=2)])
    assert [b for b in inner.batches if b] == inner.batches[:1]  # nothing was sent after the recording
    sent = inner.prepare(_req("new one", sample_index=3, seed=2))
    key = sent.key("counting@local", "m-1")
    assert (err.value.request, err.value.key, err.value.provider, err.value.model) == (sent, key, "counting@local",
                                                                                         "m-1")
    assert str(err.value) == (
        f"llm.cache=replay: no cached answer for purpose=reward sample_index=3 seed=2 provider=counting@local "
        f"model=m-1 (key {key[:16]}..., cache {tmp_path}); prompt starts 'new one'. "
        "Replay needs the same config, seed and cache directory as the recorded run.")


def test_a_batch_that_answers_fewer_requests_than_sent_is_an_error(tmp_path):
    with pytest.raises(ValueError):
        CachingGenerator(BatchLLM(drop=True), ResponseCache(tmp_path)).complete_many([_req("a"), _req("b")])


def test_an_unbatched_generator_answers_a_wave_one_request_at_a_time_through_the_cache(tmp_path):
    inner = CountingLLM()
    gen = CachingGenerator(inner, ResponseCache(tmp_path))
    assert [r.text for r in gen.complete_many([_req("a")])] == ["answer 1"]
    got = gen.complete_many([_req("a"), _req("b")])
    assert [(r.text, r.cached) for r in got] == [("answer 1", True), ("answer 2", False)] and inner.calls == 2
