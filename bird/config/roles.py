"""The two LLM roles' settings: the generator's (llm.*) and the judge's (judge.*, each None inheriting the
generator's value), their sampling temperature and reasoning effort, and the providers' constraints on them."""

from __future__ import annotations

import dataclasses
from typing import Any

from bird import registry
from bird.config.needs import needs_judge
from bird.config.schema import BirdConfig, JudgeConfig, LLMConfig

__all__ = ["REASONING_EFFORTS", "judge_llm_config", "generator_temperature", "judge_temperature", "check_roles"]

#: llm.reasoning_effort / judge.reasoning_effort: none sends no reasoning parameter (the model's default)
REASONING_EFFORTS = ("none", "low", "medium", "high", "xhigh", "max")


def judge_llm_config(llm: LLMConfig, judge: JudgeConfig) -> LLMConfig:
    """The judge's LLMConfig: judge.* where set, else the generator's llm.* (model/base_url/price only when the
    backend is inherited)."""
    llm, judge = _typed(llm, LLMConfig), _typed(judge, JudgeConfig)
    same = judge.backend in (None, llm.backend)
    if not same and judge.model is None:
        raise ValueError(f"judge.backend={judge.backend!r} differs from llm.backend={llm.backend!r}: set judge.model")
    out = dataclasses.replace(
        llm,
        backend=judge.backend or llm.backend,
        model=(judge.model or llm.model) if same else judge.model,
        base_url=judge.base_url if judge.base_url is not None or not same else llm.base_url,
        api_key_env=judge.api_key_env if judge.api_key_env is not None or not same else llm.api_key_env,
    )
    if judge.temperature is not None:
        out.temperature = judge.temperature
    if judge.reasoning_effort is not None:
        out.reasoning_effort = judge.reasoning_effort
    if judge.max_concurrency is not None:
        out.max_concurrency = judge.max_concurrency
    if judge.price_per_mtok is not None:
        out.price_per_mtok = dict(judge.price_per_mtok)
    elif not same or out.model != llm.model:
        out.price_per_mtok = None  # the price table's entry for the judge's own model
    return out


def _typed(cfg: Any, cls: type) -> Any:
    """A dataclass instance even when handed an OmegaConf node."""
    if dataclasses.is_dataclass(cfg) and not isinstance(cfg, type):
        return cfg
    from omegaconf import OmegaConf

    return OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(cls), cfg))


def _generator_temperature(cfg: BirdConfig) -> tuple[float, str]:
    if cfg.llm.temperature is not None:
        return cfg.llm.temperature, "llm.temperature"
    return cfg.generate.temperature, "generate.temperature"


def _judge_temperature(cfg: BirdConfig) -> tuple[float, str]:
    if cfg.judge.temperature is not None:
        return cfg.judge.temperature, "judge.temperature"
    return _generator_temperature(cfg)


def generator_temperature(cfg: BirdConfig) -> float:
    """The generator's sampling temperature: llm.temperature, else the method's generate.temperature."""
    return _generator_temperature(cfg)[0]


def judge_temperature(cfg: BirdConfig) -> float:
    """The temperature of judge calls: judge.temperature, else the generator's (as BIRD's release, whose in-loop
    judge is the generator: safety-research/bird@54a9ce3:bird/components/evaluation.py fitness_vlm_score)."""
    return _judge_temperature(cfg)[0]


def check_roles(cfg: BirdConfig, problems: list[str]) -> None:
    """Reasoning efforts and temperatures each role can send: a provider that takes only one temperature while
    reasoning (registry declaration `reasoning_temperature`) is refused any other configured value, naming the key."""
    before = len(problems)
    for key, value in (("llm.reasoning_effort", cfg.llm.reasoning_effort),
                       ("judge.reasoning_effort", cfg.judge.reasoning_effort)):
        if value is not None and value not in REASONING_EFFORTS:
            problems.append(f"{key}={value!r}: allowed: {list(REASONING_EFFORTS)}" +
                            (" or null (= llm.reasoning_effort)" if key.startswith("judge") else ""))
    for key, value in (("llm.temperature", cfg.llm.temperature), ("judge.temperature", cfg.judge.temperature)):
        if value is not None and not 0.0 <= value <= 2.0:
            problems.append(f"{key}={value}: must be in [0, 2] or null")
    if len(problems) > before:
        return
    effort_key = "judge.reasoning_effort" if cfg.judge.reasoning_effort is not None else "llm.reasoning_effort"
    backend_key = "judge.backend" if cfg.judge.backend is not None else "llm.backend"
    roles = [(cfg.llm, _generator_temperature(cfg), "llm.reasoning_effort", "llm.backend")]
    try:
        if needs_judge(cfg):
            roles.append((judge_llm_config(cfg.llm, cfg.judge), _judge_temperature(cfg), effort_key, backend_key))
    except ValueError:  # an unregistered component or a judge backend without a model: reported elsewhere
        pass
    for role, (temperature, source), effort, backend in roles:
        _check_role(role, temperature, source, effort, backend, problems)


def _check_role(role: LLMConfig, temperature: float, source: str, effort: str, backend: str,
                problems: list[str]) -> None:
    if role.reasoning_effort == "none" or role.backend not in registry.names("llm"):
        return
    fixed = registry.declared("llm", role.backend).reasoning_temperature
    only = fixed(role) if fixed is not None else None
    if only is not None and temperature != only:
        problem = (f"{source}={temperature} with {effort}={role.reasoning_effort!r} on {backend}={role.backend!r}: "
                   f"the provider takes only temperature {only} while reasoning; set {source}={only} or {effort}=none")
        if problem not in problems:
            problems.append(problem)
