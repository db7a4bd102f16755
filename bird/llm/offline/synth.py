"""The offline reward-program synthesiser: a deterministic no-LLM baseline answering reward and mutation requests.

It reads only the request's context (task text, observation index, action size, parent code, feedback shown).
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import replace

from bird.llm.base import Generator, LLMError, Request, Response
from bird.llm.blocks import fenced_blocks
from bird.llm.offline import judge_synth, plan_synth
from bird.llm.offline.demo_synth import answer_demo_request, answer_goal_states
from bird.llm.offline.mutation import mutate
from bird.llm.offline.operator_synth import answer_operator
from bird.llm.offline.proposals import parent_terms, propose
from bird.llm.offline.terms import render_program
from bird.llm.offline.thought_synth import answer_alignment, design_thought

__all__ = ["OfflineSynthesiser", "LABEL"]

LABEL = "offline synthesiser (no-LLM baseline)"


class OfflineSynthesiser(Generator):
    """Answers `reward` and `mutation` requests deterministically from (seed, sample_index, context) (with a design
    thought in braces when the prompt asks for one), `decompose`, progress-program and `judge` requests
    (bird/llm/offline/plan_synth.py) and `thought_alignment` requests (bird/llm/offline/thought_synth.py)."""

    provider = "offline"
    label = LABEL

    @staticmethod
    def _special(request: Request) -> str | None:
        ctx = request.context
        if request.purpose == "judge":
            return plan_synth.answer_judge(ctx, LABEL)
        if request.purpose == "goal_states":
            return answer_goal_states(ctx, LABEL)
        if request.purpose == "thought_alignment":
            return answer_alignment(ctx, LABEL)
        if request.purpose in ("judge_score", "summary", "subtask_revision") or ctx.get("kind") == "subtask_list":
            answer = {"judge_score": judge_synth.answer_judge_score, "summary": judge_synth.answer_summary,
                      "subtask_revision": judge_synth.answer_revision}.get(request.purpose, judge_synth.answer_subtasks)
            return answer(ctx, LABEL)
        if request.purpose == "decompose" and "obs_fields" in ctx:
            return plan_synth.answer_decompose(ctx, LABEL)
        if ctx.get("contract") == "progress_program" and "obs_fields" in ctx:
            return plan_synth.answer_progress(ctx, LABEL)
        return None

    @staticmethod
    def _rng(request: Request) -> random.Random:
        ctx = request.context
        digest = hashlib.sha256(
            json.dumps([request.seed, request.sample_index, request.purpose, ctx.get("parent_code"),
                        ctx.get("iteration")], sort_keys=True, default=str).encode()
        ).hexdigest()
        return random.Random(int(digest[:16], 16))

    def complete(self, request: Request) -> Response:
        """The answer; asked through a tool (generate.answer_form=tool), its program is that tool's call."""
        response = self._complete_text(request)
        blocks = [b.text for b in fenced_blocks(response.text) if b.python_tagged]
        if request.tool is None or not blocks:
            return response
        call = {"name": request.tool.name, "arguments": {request.tool.argument: blocks[-1] + "\n"}}
        return replace(response, tool_calls=(call,), finish_reason="tool_calls")

    def _complete_text(self, request: Request) -> Response:
        ctx = request.context
        special = self._special(request)
        if special is not None:
            return Response(text=special, model=self.model, input_tokens=0, output_tokens=0, cost_usd=0.0,
                            finish_reason="stop")
        if ctx.get("contract") == "reward_class" and "obs_fields" in ctx:
            text = answer_demo_request(ctx, request.purpose, self._rng(request), LABEL)
            return Response(text=text, model=self.model, input_tokens=0, output_tokens=0, cost_usd=0.0,
                            finish_reason="stop")
        if request.purpose == "self_verify":
            text = answer_operator(request.purpose, ctx, self._rng(request), LABEL) or ""
            return Response(text=text, model=self.model, input_tokens=0, output_tokens=0, cost_usd=0.0,
                            finish_reason="stop")
        if "obs_fields" not in ctx or "task" not in ctx:
            raise LLMError(f"offline synthesiser cannot answer a {request.purpose!r} request without obs_fields/task")
        rng = self._rng(request)
        text = answer_operator(request.purpose, ctx, rng, LABEL)
        if text is not None:
            return Response(text=text, model=self.model, input_tokens=0, output_tokens=0, cost_usd=0.0,
                            finish_reason="stop")
        parent = parent_terms(ctx.get("parent_code"))
        if request.purpose == "mutation" and parent and not ctx.get("error"):
            terms, how = mutate(ctx, parent, rng), "mutated from the parent using the feedback shown"
        else:
            terms, how = propose(ctx, rng), "proposed from the observation index and task text"
        code = render_program(terms, f"{LABEL}: {how}", ctx.get("language", "numpy"),
                              weighted=ctx.get("contract") == "weighted_components")
        text = f"Offline synthesiser ({how}).\n\n```python\n{code}```\n"
        if ctx.get("design_thought"):  # the prompt asked for a design thought in braces before the code
            text = "{" + design_thought(terms) + "}\n" + text
        return Response(text=text, model=self.model, input_tokens=0, output_tokens=0, cost_usd=0.0,
                            finish_reason="stop")
