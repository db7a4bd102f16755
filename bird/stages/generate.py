"""Generate: render the prompt (parent, history, env representation) and ask the generator for K programs."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from bird.config.schema import BirdConfig
from bird.llm.base import BudgetExhausted, Generator, LLMError, Message, Request, Response
from bird.prompts import initial_user_message, obs_fields_context, templates
from bird.registry import register
from bird.stages.extract import extract_code
from bird.state import SearchState
from bird.types import Candidate, Failure, FailureKind

__all__ = ["generate", "build_request"]


# -- parent: which earlier candidate the next prompt builds on ------------------------------------------------
@register("parent", "iteration_best")
def _iteration_best(state: SearchState) -> str | None:
    return state.iteration_best


@register("parent", "global_best")
def _global_best(state: SearchState) -> str | None:
    return state.global_best


@register("parent", "none")
def _no_parent(state: SearchState) -> str | None:
    return None


# -- history: which (answer, feedback) turns the prompt carries -------------------------------------------------
@register("history", "none")
def _history_none(state: SearchState, parent: str | None, turns: int) -> list[str]:
    return []


@register("history", "last_iteration")
def _history_lineage(state: SearchState, parent: str | None, turns: int) -> list[str]:
    """Eureka's sliding window: the parent's turn, preceded by its ancestors' up to `turns` in all."""
    chain: list[str] = []
    while parent is not None and len(chain) < turns:
        chain.append(parent)
        parent = state.candidates[parent].parent_id
    return chain[::-1]


def build_request(cfg: BirdConfig, state: SearchState, sample_index: int) -> Request:
    """The prompt for one sample of this iteration, with the structured context of exactly what it shows."""
    t = templates(cfg.generate.prompt)
    from bird import registry

    parent = registry.get("parent", cfg.generate.parent)(state)
    chain = registry.get("history", cfg.generate.history)(state, parent, cfg.generate.history_turns)
    system = t["system"].format(signature=t["signature"], code_output_tip=t["code_output_tip"])
    messages = [Message("system", system),
                Message("user", initial_user_message(cfg.generate.prompt, cfg.generate.env_representation, state.spec))]
    for cid in chain:
        report = state.reports[cid]
        messages.append(Message("assistant", state.candidates[cid].response))
        messages.append(Message("user", "\n".join([report.feedback, t["code_feedback"], t["code_output_tip"]])))
    context: dict[str, Any] = {
        "task": state.spec.description,
        "obs_fields": obs_fields_context(state.spec),
        "action_dim": state.spec.action_dim,
        "iteration": state.iteration,
    }
    if chain:
        context["parent_code"] = state.candidates[chain[-1]].code
        context["feedback"] = state.reports[chain[-1]].stats
    return Request(
        purpose="mutation" if chain else "reward",
        messages=tuple(messages),
        context=context,
        temperature=cfg.generate.temperature,
        max_tokens=cfg.generate.max_tokens,
        sample_index=sample_index,
        seed=state.seed,
    )


def _candidate(state: SearchState, index: int, request: Request, parent: str | None) -> Candidate:
    return Candidate(id=f"it{state.iteration}-c{index}", iteration=state.iteration, index=index,
                     messages=request.messages_json(), parent_id=parent)


def _fill(cand: Candidate, answer: Response | LLMError) -> None:
    if isinstance(answer, LLMError):
        kind = FailureKind.SKIPPED if isinstance(answer, BudgetExhausted) else FailureKind.LLM_ERROR
        cand.failure = Failure(kind, str(answer)[:500])
        return
    cand.response = answer.text
    cand.llm = answer.to_json()
    cand.code = extract_code(answer.text)
    if cand.code is None:
        cand.failure = Failure(FailureKind.PARSE_ERROR, "no code block in the answer")


def generate(cfg: BirdConfig, state: SearchState, generator: Generator) -> list[Candidate]:
    """K candidates for this iteration; a failed request or parse is recorded on the candidate."""
    from bird import registry

    k = state.plan.n_candidates
    if cfg.train.reward_source == "reference":  # oracle: train the env's own reward, nothing to generate
        return [Candidate(id=f"it{state.iteration}-c{i}", iteration=state.iteration, index=i, messages=[],
                          response="(reference reward)") for i in range(k)]
    parent = registry.get("parent", cfg.generate.parent)(state)
    requests = [build_request(cfg, state, i) for i in range(k)]
    cands = [_candidate(state, i, r, parent if r.purpose == "mutation" else None) for i, r in enumerate(requests)]
    for cand, answer in zip(cands, generator.complete_many(requests), strict=True):
        _fill(cand, answer)
        if isinstance(answer, BudgetExhausted):
            state.stop_reason = str(answer)
    for retry in range(1, cfg.generate.parse_retries + 1):  # resample unparseable answers
        bad = [c for c in cands if c.failure is not None and c.failure.kind == FailureKind.PARSE_ERROR]
        if not bad or state.stop_reason:
            break
        again = [replace(requests[c.index], sample_index=c.index + retry * k) for c in bad]
        for cand, answer in zip(bad, generator.complete_many(again), strict=True):
            cand.failure = None
            _fill(cand, answer)
    if cfg.llm.abort_on_error and any(c.failure and c.failure.kind == FailureKind.LLM_ERROR for c in cands):
        raise LLMError("llm.abort_on_error: a request failed after all retries")
    return cands
