"""llm.reasoning_effort and the judge's temperature, over the real SDK wire protocols (local fake servers): each
provider's own reasoning form, the judge inheriting the generator's temperature, the config-time refusal of a
temperature a provider does not take while reasoning, and what the call records say."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from bird.components import judgement, self_verify, summary, thought
from bird.config.load import ConfigError, compose
from bird.config.schema import BirdConfig
from bird.llm.base import NOT_APPLICABLE, LLMError, Message, Request
from bird.llm.factory import make_generator, make_judge
from bird.types import Candidate

from .conftest import llm_cfg, no_budget
from .fake_servers import FakeLLMServer


def _req(temperature: float = 1.0) -> Request:
    return Request("reward", (Message("system", "be brief"), Message("user", "write a reward")),
                   temperature=temperature)


# -- the provider's own form ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("effort", ["low", "medium", "high"])
def test_reasoning_effort_reaches_each_provider_in_its_own_form(wire, server, tmp_path, effort):
    gen = make_generator(llm_cfg(wire, server, tmp_path, reasoning_effort=effort), no_budget())
    gen.complete(_req())
    body = server.requests[0]
    if wire == "anthropic":  # adaptive thinking at that effort (BIRD's release: anthropic_client.py `_one`)
        assert body["thinking"] == {"type": "adaptive"} and body["output_config"] == {"effort": effort}
        assert "reasoning_effort" not in body and "temperature" not in body
    else:
        assert body["reasoning_effort"] == effort and "thinking" not in body and "output_config" not in body


def test_no_reasoning_parameter_is_sent_when_the_effort_is_none(wire, server, tmp_path):
    make_generator(llm_cfg(wire, server, tmp_path), no_budget()).complete(_req())
    assert not {"thinking", "output_config", "reasoning_effort"} & set(server.requests[0])


def test_anthropic_gets_no_temperature_while_thinking_and_the_record_says_what_was_asked(server, tmp_path, wire):
    journal = tmp_path / "calls.jsonl"
    gen = make_generator(llm_cfg(wire, server, tmp_path, reasoning_effort="medium"), no_budget(), journal)
    gen.complete(_req(temperature=0.0))  # a request's own temperature (a component may set one)
    body, entry = server.requests[0], json.loads(journal.read_text())
    assert entry["reasoning_effort"] == "medium"
    if wire == "anthropic":
        assert "temperature" not in body and "extra_body" not in body
        assert (entry["temperature"], entry["requested_temperature"]) == (1.0, 0.0)
    else:  # a compatible server (base_url) takes any temperature while reasoning
        assert body["temperature"] == 0.0 and entry["temperature"] == 0.0 and "requested_temperature" not in entry


def test_api_openai_com_gets_no_temperature_while_reasoning(tmp_path):
    from bird.llm.openai_backend import OpenAIBackend

    backend = OpenAIBackend(llm_cfg("openai", None, tmp_path, reasoning_effort="high"), connect=False)
    params = backend._params(backend.prepare(_req(temperature=0.3)))
    assert params["reasoning_effort"] == "high" and "temperature" not in params
    plain = OpenAIBackend(llm_cfg("openai", None, tmp_path), connect=False)
    assert plain._params(plain.prepare(_req(temperature=0.3)))["temperature"] == 0.3


def test_reasoning_effort_is_part_of_the_cache_address_unless_none():
    base = Request("reward", (Message("user", "write a reward"),), temperature=0.5, max_tokens=100, sample_index=3,
                   seed=7)
    # the address an answer recorded before llm.reasoning_effort existed was stored under
    assert base.key("anthropic", "claude-x") == "90e996a06fb69646f6057c769c7f3d62f0306bc7344c4de73563f930876107e4"
    medium = Request(**{**base.__dict__, "reasoning_effort": "medium"})
    high = Request(**{**base.__dict__, "reasoning_effort": "high"})
    assert len({base.key("a", "m"), medium.key("a", "m"), high.key("a", "m")}) == 3


def test_the_offline_synthesiser_records_reasoning_as_not_applicable(tmp_path):
    journal = tmp_path / "calls.jsonl"
    cfg = compose(["method=rda", "budget=smoke", "llm.reasoning_effort=medium"])
    assert cfg.llm.backend == "offline"
    gen = make_generator(cfg.llm, cfg.budget, journal)
    with pytest.raises(LLMError):  # an unanswerable request is journalled too
        gen.complete(Request("reward", (Message("user", "x"),), context={}))
    entry = json.loads(journal.read_text())
    assert entry["reasoning_effort"] == NOT_APPLICABLE and entry["temperature"] == NOT_APPLICABLE
    assert gen.describe()["reasoning_effort"] == NOT_APPLICABLE


def test_a_backend_describes_its_reasoning_effort_and_temperature(wire, server, tmp_path):
    gen = make_generator(llm_cfg(wire, server, tmp_path, reasoning_effort="low", temperature=1.0), no_budget())
    assert {k: gen.describe()[k] for k in ("reasoning_effort", "temperature")} == {"reasoning_effort": "low",
                                                                                  "temperature": 1.0}


# -- the judge's temperature and reasoning effort ----------------------------------------------------------------------

def _judge_requests(cfg: BirdConfig) -> dict[str, Request]:
    """One judge call of each kind bird's components make (judge scores, summaries, thought alignment, self-verification)."""
    state = SimpleNamespace(spec=SimpleNamespace(description="make the hopper hop"), seed=0, thoughts={})
    cand = Candidate(id="it1-c0", iteration=1, index=0, messages=[], code="def compute_reward(obs):\n    return 1.0\n")
    subtasks = [{"name": "hop", "description": "hop forward", "done_when": "it moves"}]
    scale = judgement.get("score_scale", "unit")
    report = SimpleNamespace(feedback="feedback", stats={})
    return {"judge_score": judgement._request(cfg, state, cand, 0, 0, subtasks, scale, ("evidence", {"components": []}, [])),
            "summary": summary._request(cfg, state, cand, None, "evidence", {}, 0),
            "thought_alignment": thought._align_request(cfg, state, cand),
            "self_verify": self_verify._request(cfg, state, cand, report)}


@pytest.mark.parametrize(("overrides", "expected"), [
    ([], 0.7),                                # the generator's: generate.temperature
    (["llm.temperature=0.4"], 0.4),           # the generator's: its override
    (["judge.temperature=0.2"], 0.2),         # the judge's own key
    (["llm.temperature=0.4", "judge.temperature=0.0"], 0.0),
])
def test_a_judge_call_carries_the_generators_temperature_unless_the_judge_sets_its_own(wire, server, tmp_path,
                                                                                     overrides, expected):
    cfg = compose(["method=rda", "budget=smoke", "generate.temperature=0.7", f"llm={wire}", "llm.model=test-model",
                   f"llm.base_url={server.base_url}", "llm.cache=off", f"llm.cache_dir={tmp_path}",
                   "llm.reasoning_effort=none", *overrides])
    generator = make_generator(cfg.llm, cfg.budget)
    judge = make_judge(cfg.llm, cfg.judge, generator)
    generator.complete(_req(temperature=cfg.generate.temperature))
    sent = [_temperature(wire, server.requests[0])]
    for request in _judge_requests(cfg).values():
        judge.complete(request)
        sent.append(_temperature(wire, server.requests[-1]))
    generator_t = 0.4 if "llm.temperature=0.4" in overrides else 0.7
    assert sent == [generator_t, expected, expected, expected, expected]


def _temperature(wire: str, body: dict) -> float:
    """The temperature a request body asks for (Anthropic's default 1.0 is never sent)."""
    return body.get("temperature", 1.0) if wire == "anthropic" else body["temperature"]


def test_the_judge_reasons_at_the_generators_effort_unless_it_sets_its_own(tmp_path):
    with FakeLLMServer("anthropic", "{}") as srv:
        base = ["method=rda", "budget=smoke", "llm=anthropic", "llm.model=test-model", f"llm.base_url={srv.base_url}",
                "llm.cache=off", "llm.reasoning_effort=medium"]
        for extra, effort in (([], "medium"), (["judge.reasoning_effort=low"], "low"),
                              (["judge.reasoning_effort=none"], None)):
            cfg = compose([*base, *extra])
            judge = make_judge(cfg.llm, cfg.judge, make_generator(cfg.llm, cfg.budget))
            judge.complete(_judge_requests(cfg)["judge_score"])
            assert srv.requests[-1].get("output_config") == (effort and {"effort": effort})


# -- refused when the config loads -------------------------------------------------------------------------------------

def test_a_temperature_the_provider_refuses_while_reasoning_fails_at_load_naming_the_key():
    with pytest.raises(ConfigError) as err:  # CARD samples at 0.7
        compose(["method=card", "llm=anthropic", "llm.reasoning_effort=medium"])
    assert "generate.temperature=0.7 with llm.reasoning_effort='medium' on llm.backend='anthropic'" in str(err.value)
    with pytest.raises(ConfigError, match=r"judge\.temperature=0\.0 with llm\.reasoning_effort='medium'"):
        compose(["method=rda", "llm=anthropic", "llm.reasoning_effort=medium", "judge.temperature=0.0"])
    with pytest.raises(ConfigError, match=r"llm\.temperature=0\.5 with llm\.reasoning_effort='high' on llm\.backend='openai'"):
        compose(["method=eureka", "llm=openai", "llm.reasoning_effort=high", "llm.temperature=0.5"])


def test_the_same_temperatures_load_where_the_provider_takes_them():
    compose(["method=card", "llm=anthropic"])  # no reasoning: any temperature goes out
    compose(["method=card", "llm=openai", "llm.base_url=http://127.0.0.1:8000/v1", "llm.reasoning_effort=medium"])
    compose(["method=rda", "llm=anthropic", "llm.reasoning_effort=medium", "judge.temperature=0.0",
             "judge.reasoning_effort=none"])
    compose(["method=eureka", "llm=anthropic", "judge.temperature=0.0"])  # eureka builds no judge


def test_an_unknown_reasoning_effort_fails_at_load_naming_the_allowed_values():
    with pytest.raises(ConfigError, match=r"llm\.reasoning_effort='lots': allowed: \['none', 'low', 'medium'"):
        compose(["llm.reasoning_effort=lots"])
    with pytest.raises(ConfigError, match=r"judge\.reasoning_effort='x'"):
        compose(["judge.reasoning_effort=x"])



def test_anthropic_thinking_offers_the_answer_tool_without_forcing_it(tmp_path):
    from bird.llm.anthropic_backend import AnthropicBackend
    from bird.llm.base import AnswerTool

    tool = AnswerTool("submit_reward", "Submit the reward function.", "code")
    plain = AnthropicBackend(llm_cfg("anthropic", None, tmp_path), connect=False)
    thinking = AnthropicBackend(llm_cfg("anthropic", None, tmp_path, reasoning_effort="medium"), connect=False)
    request = Request("reward", (Message("user", "write a reward"),), tool=tool)
    assert plain._params(plain.prepare(request))["tool_choice"] == {"type": "tool", "name": "submit_reward"}
    params = thinking._params(thinking.prepare(request))
    assert params["tool_choice"] == {"type": "auto"} and params["tools"][0]["name"] == "submit_reward"
