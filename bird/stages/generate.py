"""Generate: render the prompt (parent, history, env representation) and ask the generator for K programs."""

from __future__ import annotations

import hashlib
import random
from dataclasses import replace
from typing import Any

from bird.components.context import context_blocks, initial_user_message
from bird.components.crossover import crossover_children
from bird.components.operators import SamplePlan, operator_request
from bird.components.schedule import remaining_trainings
from bird.components.screens import screen
from bird.components.thought import record_thoughts
from bird.config.schema import BirdConfig
from bird.learners.job import learner_trains, loop_learner
from bird.llm.base import BudgetExhausted, Generator, LLMError, Message, Request, Response
from bird.prompts import obs_fields_context, system_template, templates
from bird.registry import get, register
from bird.reward.checks import verify_code
from bird.reward.contracts import answer_tool, read_answer
from bird.state import SearchState
from bird.types import Candidate, Failure, FailureKind

__all__ = ["generate", "build_request", "choose_parent"]

_GENERATE_KINDS = {FailureKind.PARSE_ERROR, FailureKind.TRUNCATED, FailureKind.INCOMPLETE, FailureKind.REFUSED,
                   FailureKind.AMBIGUOUS_ANSWER, FailureKind.LLM_ERROR, FailureKind.SKIPPED}


# -- parent: which earlier candidate a sample builds on (chosen per sample; fn(cfg, state, rng, temperature)) -------------------------------
@register("parent", "iteration_best")
def _iteration_best(cfg: BirdConfig, state: SearchState, rng: random.Random, temperature: float) -> str | None:
    return state.iteration_best


@register("parent", "global_best")
def _global_best(cfg: BirdConfig, state: SearchState, rng: random.Random, temperature: float) -> str | None:
    return state.global_best


@register("parent", "none")
def _no_parent(cfg: BirdConfig, state: SearchState, rng: random.Random, temperature: float) -> str | None:
    return None


@register("parent", "latest")
def _latest(cfg: BirdConfig, state: SearchState, rng: random.Random, temperature: float) -> str | None:
    """The most recent candidate that received feedback (a single refinement chain)."""
    return next(reversed(state.reports), None)


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


@register("history", "full_dialogue")
def _history_full(state: SearchState, parent: str | None, turns: int) -> list[str]:
    """Every turn of the parent's lineage, oldest first (an append-only dialogue; `turns` is ignored)."""
    return _history_lineage(state, parent, len(state.candidates) + 1)


def _rng(state: SearchState, sample_index: int, salt: str) -> random.Random:
    digest = hashlib.sha256(f"{state.seed}/{state.iteration}/{sample_index}/{salt}".encode()).hexdigest()
    return random.Random(int(digest[:16], 16))


def choose_parent(cfg: BirdConfig, state: SearchState, sample_index: int) -> str | None:
    """The parent of one sample (deterministic in seed, iteration and sample index)."""
    fn = get("parent", cfg.generate.parent)
    return fn(cfg, state, _rng(state, sample_index, "parent"), cfg.generate.parent_temperature)


def _dialogue(cfg: BirdConfig, state: SearchState, chain: list[str], t: dict[str, str]) -> list[Message]:
    user = t.get("feedback_user", "{feedback}\n{code_feedback}\n{code_output_tip}")
    out: list[Message] = []
    for cid in chain:
        report = state.reports[cid]
        out.append(Message("assistant", state.candidates[cid].response))
        out.append(Message("user", user.format(feedback=report.feedback, code_feedback=t.get("code_feedback", ""),
                                               code_output_tip=t.get("code_output_tip", "")).strip()))
    return out


@register("prompt_mode", "dialogue")
def _dialogue_mode(cfg: BirdConfig, state: SearchState, system: str, first: str, chain: list[str]) -> list[Message]:
    """System, first user message, then each earlier turn as (assistant answer, user feedback) messages."""
    return [Message("system", system), Message("user", first), *_dialogue(cfg, state, chain, templates(cfg.generate.prompt))]


def build_request(cfg: BirdConfig, state: SearchState, sample_index: int, plan: SamplePlan | None = None) -> Request:
    """The prompt for one sample of this iteration, with the structured context of exactly what it shows. A plan
    naming an operator renders that operator's prompt (bird/components/operators.py)."""
    if plan is not None and plan.operator != "sample":
        return operator_request(cfg, state, sample_index, plan)
    language = cfg.reward.language or "numpy"
    t = templates(cfg.generate.prompt, language)
    parent = choose_parent(cfg, state, sample_index)
    chain = get("history", cfg.generate.history)(state, parent, cfg.generate.history_turns)
    system = system_template(t, state.spec.suite).format(signature=t.get("signature", ""), code_output_tip=t.get("code_output_tip", ""),
                                action_dim=state.spec.action_dim)
    context: dict[str, Any] = {
        "obs_fields": obs_fields_context(state.spec, cfg.generate.field_view),
        "action_dim": state.spec.action_dim,
        "iteration": state.iteration,
        "contract": cfg.reward.contract,
        **({"language": language} if language != "numpy" else {}),  # numpy requests keep their cache keys
    }
    mutation = parent is not None and not chain and "mutation_user" in t and parent in state.reports
    if mutation:  # one self-contained mutation prompt (parent code + its feedback view), no dialogue
        fields, extra = get("mutation_view", cfg.generate.mutation_view)(cfg, state, parent,
                                                                          _rng(state, sample_index, "view"))
        user = t["mutation_user"].format(code=state.candidates[parent].code, **fields)
        messages = [Message("system", system), Message("user", user)]
        context.update(parent_code=state.candidates[parent].code, **extra)
    else:
        first, shown = initial_user_message(cfg.generate.prompt, cfg.generate.env_representation, state,
                                            cfg.generate.field_view, _rng(state, sample_index, "shown_demos"))
        messages = get("prompt_mode", cfg.generate.prompt_mode)(cfg, state, system, first, chain)
        context.update(shown)
    messages = _append_to_last_user(messages, *_context_blocks(cfg, state, chain[-1] if chain else parent, context))
    if chain:
        context["parent_code"] = state.candidates[chain[-1]].code
        context["feedback"] = state.reports[chain[-1]].stats
        if len(chain) > 1:
            context["history"] = [{"code": state.candidates[c].code, "feedback": state.reports[c].stats}
                                  for c in chain[:-1]]
    return Request(
        purpose="mutation" if (chain or mutation) else "reward",
        messages=tuple(messages),
        context=context,
        temperature=cfg.generate.temperature,
        max_tokens=cfg.generate.max_tokens,
        sample_index=sample_index,
        seed=state.seed,
    )


def _context_blocks(cfg: BirdConfig, state: SearchState, parent: str | None, context: dict[str, Any]) -> list[str]:
    """Subtask list, behavioural analysis, parent thought, thought instruction (bird/components/context.py)."""
    pieces, shown = context_blocks(cfg, state, parent)
    context.update(shown)
    return pieces


def _append_to_last_user(messages: list[Message], *pieces: str) -> list[Message]:
    """`messages` with `pieces` appended (blank-line separated) to the last user message."""
    if not pieces:
        return messages
    i = max(k for k, m in enumerate(messages) if m.role == "user")
    last = messages[i]
    return [*messages[:i], Message("user", "\n\n".join([last.content.rstrip(), *pieces]), last.images), *messages[i + 1:]]


def _candidate(cfg: BirdConfig, state: SearchState, index: int, request: Request, plan: SamplePlan) -> Candidate:
    if plan.operator != "sample":
        parents = tuple(p for p in plan.parents if p is not None)
        return Candidate(id=f"it{state.iteration}-c{index}", iteration=state.iteration, index=index,
                         messages=request.messages_json(), parent_id=parents[0] if parents else None,
                         operator=plan.operator, co_parents=parents[1:], request=request)
    parent = choose_parent(cfg, state, index) if request.purpose == "mutation" else None
    return Candidate(id=f"it{state.iteration}-c{index}", iteration=state.iteration, index=index,
                     messages=request.messages_json(), parent_id=parent, request=request)


def _known_codes(state: SearchState, cand: Candidate, request: Request) -> list[str]:
    """Programs the prompt showed: the candidate's parents' code, and the failed code a repair shows."""
    ids = [p for p in (cand.parent_id, *cand.co_parents) if p is not None]
    codes = [state.candidates[p].code for p in ids if p in state.candidates]
    return [c for c in (*codes, request.context.get("failed_code")) if c]


def _fill(cfg: BirdConfig, state: SearchState, cand: Candidate, answer: Response | LLMError, request: Request) -> None:
    """Read one answer to `request` into the candidate: its program, or the failure to record."""
    if isinstance(answer, LLMError):
        kind = FailureKind.SKIPPED if isinstance(answer, BudgetExhausted) else FailureKind.LLM_ERROR
        cand.failure = Failure(kind, str(answer)[:500])
        if isinstance(answer, BudgetExhausted):
            state.stop_reason = str(answer)
        return
    cand.response = answer.text
    cand.llm = answer.to_json()
    reading = read_answer(get("contract", cfg.reward.contract), answer, request.max_tokens,
                          _known_codes(state, cand, request), request.tool)
    cand.code, cand.failure = reading.code, reading.failure
    if reading.notes:
        cand.llm["extraction"] = list(reading.notes)


# -- answer_form: how the program is asked for (fn(cfg, request) -> Request) -----------------------------------------
@register("answer_form", "text")
def _in_text(cfg: BirdConfig, request: Request) -> Request:
    """In the answer's text (a ```python block), read by the one answer reader (docs/llm.md)."""
    return request


TOOL_ANSWER = ("generate.answer_form=tool: the program is asked for as the argument of a tool call (OpenAI tools, "
               "Anthropic tool use), an addition to the method's paper, which reads it from the answer's text")


@register("answer_form", "tool", substitute=TOOL_ANSWER)
def _as_tool_call(cfg: BirdConfig, request: Request) -> Request:
    """As the argument of a tool the model is made to call; the call's argument is the program, no text is parsed."""
    if request.tool is not None:
        return request
    tool = answer_tool(get("contract", cfg.reward.contract))
    note = f"Give the complete program as the `{tool.argument}` argument of the tool `{tool.name}`."
    return replace(request, tool=tool, messages=tuple(_append_to_last_user(list(request.messages), note)),
                   context={**request.context, "answer_tool": tool.name})


def _answer(cfg: BirdConfig, state: SearchState, generator: Generator, cands: list[Candidate],
            requests: list[Request]) -> None:
    """Ask, read each answer, then re-ask the answers a note can repair: one the provider stopped early (truncated,
    incomplete: generate.truncation_retries times, the same request with a note, and generate.truncation_max_tokens),
    then one offering several programs (ambiguous_answer: generate.ambiguity_retries times, through generate.repair
    with a note naming them). Every request asks in generate.answer_form."""
    form = get("answer_form", cfg.generate.answer_form)
    requests = [form(cfg, r) for r in requests]
    for cand, request, answer in zip(cands, requests, generator.complete_many(requests), strict=True):
        _fill(cfg, state, cand, answer, request)
    asked = {c.id: r for c, r in zip(cands, requests, strict=True)}
    for _ in range(cfg.generate.truncation_retries):
        cut = [c for c in cands if c.failure is not None and c.failure.kind in _STOPPED_NOTES]
        if not cut or state.stop_reason:
            break
        _ask_again(cfg, state, generator, cut, [_with_note(cfg, asked[c.id], c.failure) for c in cut], asked)  # type: ignore[arg-type]
    repair = get("repair", cfg.generate.repair)
    for _ in range(cfg.generate.ambiguity_retries):
        unsure = [c for c in cands if c.failure is not None and c.failure.kind == FailureKind.AMBIGUOUS_ANSWER]
        if not unsure or state.stop_reason:
            return
        again = [form(cfg, repair(cfg, replace(c, request=asked[c.id]), asked[c.id].sample_index,
                                  _note(cfg, c.failure, asked[c.id])))  # type: ignore[arg-type]
                 for c in unsure]
        _ask_again(cfg, state, generator, unsure, again, asked)


def _ask_again(cfg: BirdConfig, state: SearchState, generator: Generator, cands: list[Candidate],
               again: list[Request], asked: dict[str, Request]) -> None:
    """Re-ask `cands` with `again`; the answer replaced is kept in `candidate.json` `resampled`."""
    for cand, request, answer in zip(cands, again, generator.complete_many(again), strict=True):
        cand.resampled.append({**cand.failure.to_json(),  # type: ignore[union-attr]
                               "output_tokens": cand.llm.get("output_tokens"), "cost_usd": cand.llm.get("cost_usd")})
        cand.failure, cand.code = None, None
        cand.attempts += 1
        _fill(cfg, state, cand, answer, request)
        asked[cand.id] = request


DEFAULT_TRUNCATED = ("Your previous answer to this was cut off at the output limit ({max_tokens} tokens) before it was "
                     "complete. Answer again, more briefly: keep the explanation short and give the complete program "
                     "in one ```python block.")
DEFAULT_INCOMPLETE = ("Your previous answer to this was stopped before it was complete ({reason}). Answer again: "
                      "give the complete program in one ```python block.")
DEFAULT_AMBIGUOUS = ("Your previous answer offered more than one program ({reason}). Answer again with exactly one "
                     "complete program, the one you mean, in one ```python block.")
# template slot and default of the note each repairable failure is re-asked with
_STOPPED_NOTES = {FailureKind.TRUNCATED: ("truncated_note", DEFAULT_TRUNCATED),
                  FailureKind.INCOMPLETE: ("incomplete_note", DEFAULT_INCOMPLETE)}
_NOTES = {**_STOPPED_NOTES, FailureKind.AMBIGUOUS_ANSWER: ("ambiguous_note", DEFAULT_AMBIGUOUS)}


def _note(cfg: BirdConfig, failure: Failure, request: Request) -> str:
    """The note that re-asks an answer to `request` failed as `failure` (template slot, else the default)."""
    slot, default = _NOTES[failure.kind]
    note = templates(cfg.generate.prompt).get(slot, default).strip()
    if request.tool is not None:  # generate.answer_form=tool
        note = note.replace("in one ```python block", f"as the `{request.tool.argument}` argument of `{request.tool.name}`")
    return note.replace("{max_tokens}", str(request.max_tokens)).replace("{reason}", failure.reason)


def _with_note(cfg: BirdConfig, request: Request, failure: Failure) -> Request:
    """`request` again with the note appended to its last user message; a cut answer's re-ask gets
    generate.truncation_max_tokens."""
    note = _note(cfg, failure, request)
    max_tokens = request.max_tokens
    if failure.kind == FailureKind.TRUNCATED:
        max_tokens = max(request.max_tokens, cfg.generate.truncation_max_tokens or 0)
    slot = _NOTES[failure.kind][0]
    return replace(request, messages=tuple(_append_to_last_user(list(request.messages), note)),
                   max_tokens=max_tokens, context={**request.context, slot: note})


def _check(cfg: BirdConfig, state: SearchState, cands: list[Candidate]) -> None:
    """Run verify's checks now (when a check failure triggers a resample), and its screens too when a screened
    candidate is to be re-asked; the verify stage reuses the result."""
    if not set(cfg.generate.resample_on) - {str(k) for k in _GENERATE_KINDS}:
        return
    for cand in cands:
        if cand.alive and cand.code is not None and cand.verified is None:
            result = verify_code(cand.code, cfg, state.smoke_batch, state.spec)
            if result.ok and str(FailureKind.SCREENED) in cfg.generate.resample_on:
                result = screen(cfg, state, cand, result)
            cand.verified = result
            cand.failure = result.failure


# -- repair: what a resample after a failed answer asks (fn(cfg, cand, sample_index, note) -> Request) ------------
@register("repair", "blind")
def _repair_blind(cfg: BirdConfig, cand: Candidate, sample_index: int, note: str = "") -> Request:
    """The same prompt again; the error is not shown. A `note` (a re-ask of an ambiguous answer) is appended to the
    last user message."""
    assert cand.request is not None
    if not note:
        return replace(cand.request, sample_index=sample_index)
    messages = tuple(_append_to_last_user(list(cand.request.messages), note))
    return replace(cand.request, messages=messages, sample_index=sample_index,
                   context={**cand.request.context, "repair_note": note})


@register("repair", "with_trace")
def _repair_with_trace(cfg: BirdConfig, cand: Candidate, sample_index: int, note: str = "") -> Request:
    """The prompt, the failed answer and its error (reason + traceback) with the method's execution_error text; with
    a `note` (a re-ask of an ambiguous answer), the note in place of that text."""
    t = templates(cfg.generate.prompt)
    assert cand.failure is not None and cand.request is not None
    error = (cand.failure.reason + ("\n" + cand.failure.detail if cand.failure.detail else ""))[-3000:]
    text = t.get("execution_error", "Executing the reward function code above has the following error: {error}. "
                                    "Please fix the bug and provide a new, improved reward function!")
    tip = t.get("code_output_tip", "")
    ask = note or text.format(error=error)
    messages = (*cand.request.messages, Message("assistant", cand.response), Message("user", (ask + "\n" + tip).strip()))
    context = {**cand.request.context, "error": error, "failed_code": cand.code}
    return replace(cand.request, purpose="repair", messages=messages, context=context, sample_index=sample_index)


def _resample(cfg: BirdConfig, state: SearchState, generator: Generator, cands: list[Candidate]) -> None:
    """Resamples while an answer fails as generate.resample_on says; generate.repair decides what they show."""
    k = state.plan.n_candidates
    _check(cfg, state, cands)
    repair = get("repair", cfg.generate.repair)
    for retry in range(1, cfg.generate.parse_retries + 1):
        bad = [c for c in cands if c.failure is not None and str(c.failure.kind) in cfg.generate.resample_on
               and c.request is not None]
        if not bad or state.stop_reason:
            break
        again = [repair(cfg, c, c.index + retry * k) for c in bad]
        for cand in bad:
            cand.resampled.append(cand.failure.to_json())  # type: ignore[union-attr]
            state.screens.pop(cand.id, None)
            cand.failure, cand.verified, cand.code = None, None, None
            cand.attempts += 1
        _answer(cfg, state, generator, bad, again)
        _check(cfg, state, bad)


def _iteration_k(cfg: BirdConfig, state: SearchState) -> int:
    k = state.plan.candidates_at(state.iteration)
    left = remaining_trainings(cfg.budget, state.policy_trainings) if learner_trains(loop_learner(cfg)) else None
    if left is not None and left < k:
        k = left
        if left == 0:
            state.stop_reason = f"budget.max_policy_trainings={cfg.budget.max_policy_trainings} reached"
    return k


def _llm_samples(cfg: BirdConfig, state: SearchState, generator: Generator, k: int) -> list[Candidate]:
    plans = get("sampling", cfg.generate.sampling)(cfg, state, k)
    requests = [build_request(cfg, state, i, plan) for i, plan in enumerate(plans)]
    cands = [_candidate(cfg, state, i, r, plan) for i, (r, plan) in enumerate(zip(requests, plans, strict=True))]
    _answer(cfg, state, generator, cands, requests)
    _resample(cfg, state, generator, cands)
    record_thoughts(cfg, state, cands)
    if cfg.llm.abort_on_error and any(c.failure and c.failure.kind == FailureKind.LLM_ERROR for c in cands):
        raise LLMError("llm.abort_on_error: a request failed after all retries")
    return cands


def generate(cfg: BirdConfig, state: SearchState, generator: Generator, wave: int = 0) -> list[Candidate]:
    """This iteration's candidates; a failed request or parse is recorded on the candidate.

    Wave 0: K − plan.n_crossover LLM samples (planned by generate.sampling), then the programmatic crossover
    children. Wave 1 (after wave 0 is trained): the crossover children wave 0 could not make for lack of parents.
    Every new candidate is then aligned (alignment.method)."""
    k = 0 if wave else _iteration_k(cfg, state)  # the schedule's K, at most the policy trainings left
    if cfg.train.reward_source == "reference":  # oracle: train the env's own reward, nothing to generate
        return [Candidate(id=f"it{state.iteration}-c{i}", iteration=state.iteration, index=i,
                          messages=[], response="(reference reward)") for i in range(k)]
    done = [c for c in state.candidates.values() if c.iteration == state.iteration]
    cands = [] if wave else _llm_samples(cfg, state, generator, k - min(state.plan.n_crossover, k))
    cands += crossover_children(cfg, state, len(done) + len(cands), wave)
    get("alignment", cfg.alignment.method)(cfg, state, generator, cands)
    return cands
