"""The offline reward-program synthesiser: a deterministic no-LLM baseline answering reward and mutation requests.

It reads only the request's context (task text, observation index, action size, parent code, feedback shown).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from typing import Any

from bird.llm.base import Generator, LLMError, Request, Response
from bird.llm.offline.mutation import mutate, optional_terms
from bird.llm.offline.terms import SPEC_MARKER, Term, render_program

__all__ = ["OfflineSynthesiser", "propose", "mutate", "parent_terms", "optional_terms"]

LABEL = "offline synthesiser (no-LLM baseline)"
_WEIGHTS = (0.1, 0.3, 1.0, 3.0)
_TEMPS = (0.05, 0.1, 0.3, 1.0)
_WORDS = {
    "progress": ("forward", "run", "hop", "swim", "fast", "move", "walk"),
    "balance": ("balance", "upright", "falling", "fall", "keep the pole"),
    "reach": ("target", "reach", "goal", "push", "place", "open", "close", "press", "insert", "pick", "tip"),
}


def _words(task: str, group: str) -> bool:
    low = task.lower()
    return any(w in low for w in _WORDS[group])


def _pick(fields: list[dict], kind: str, axis: str | None = None) -> dict | None:
    for f in fields:
        if f["kind"] == kind and not f.get("always_zero") and (axis is None or f.get("axis") == axis):
            return f
    return None


_HAND_WORDS = {"hand", "gripper", "tcp", "ee", "finger", "fingertip", "effector", "eef"}


def _tokens(name: str) -> set[str]:
    """Lower-case words of a field name ("drawer_handle_pos" -> {"drawer", "handle", "pos"})."""
    return set(re.split(r"[^a-z0-9]+", name.lower()))


def _position_pairs(fields: list[dict]) -> list[tuple[str, str]]:
    """(hand, object) and (object, goal) pairs among multi-d position/goal fields, by their names."""
    pos = [f for f in fields if f["kind"] in ("position", "goal") and f["size"] >= 2 and not f.get("always_zero")]
    pos = [f for f in pos if not _tokens(f["name"]) & {"prev", "previous", "last"}]
    hand = [f["name"] for f in pos if _tokens(f["name"]) & _HAND_WORDS]
    goal = [f["name"] for f in pos if f["kind"] == "goal" or _tokens(f["name"]) & {"goal", "target"}]
    objs = [f["name"] for f in pos if f["name"] not in hand and f["name"] not in goal]
    pairs = []
    if hand and objs:
        pairs.append((hand[0], objs[0]))
    if objs and goal:
        pairs.append((objs[0], goal[0]))
    if hand and goal and not objs:
        pairs.append((hand[0], goal[0]))
    return pairs


def _required_terms(ctx: dict[str, Any], rng: random.Random) -> list[Term]:
    fields, task = ctx["obs_fields"], ctx["task"]
    terms: list[Term] = []
    vel = _pick(fields, "velocity", "x")
    if vel and _words(task, "progress"):
        terms.append(Term("forward_progress", "progress", (vel["name"],), rng.choice((1.0, 1.0, 3.0))))
    angle = _pick(fields, "angle")
    if angle and (_words(task, "balance") or _words(task, "progress")):
        terms.append(Term("upright", "upright", (angle["name"],), rng.choice(_WEIGHTS),
                          rng.choice(("linear", "exp")), rng.choice(_TEMPS)))
    if _words(task, "balance") or "without falling" in task.lower():
        terms.append(Term("alive", "alive", (), rng.choice((0.1, 0.5, 1.0))))
    delta = _pick(fields, "position_delta")
    if delta and _words(task, "reach"):
        terms.append(Term("target_distance", "distance", (delta["name"],), rng.choice((1.0, 3.0)),
                          rng.choice(("linear", "exp")), rng.choice(_TEMPS)))
    for a, b in _position_pairs(fields) if _words(task, "reach") else []:
        terms.append(Term(f"{a}_to_{b}", "pair_distance", (a, b), rng.choice((1.0, 3.0)),
                          rng.choice(("linear", "exp")), rng.choice(_TEMPS)))
    if not terms:  # nothing matched the task words: fall back to progress along x or staying alive
        terms.append(Term("forward_progress", "progress", (vel["name"],)) if vel else Term("alive", "alive"))
    return terms


def propose(ctx: dict[str, Any], rng: random.Random) -> list[Term]:
    """A fresh program: the task-implied terms plus a seeded subset of optional ones."""
    terms = _required_terms(ctx, rng)
    for opt in optional_terms(ctx, terms):
        if rng.random() < 0.5:
            terms.append(opt.scaled(rng.choice((0.3, 1.0, 3.0))))
    return terms


def parent_terms(code: str | None) -> list[Term] | None:
    """The term spec an offline program carries in its marker comment (None for any other program)."""
    if not code:
        return None
    for line in code.splitlines():
        if line.startswith(SPEC_MARKER):
            try:
                return [Term.from_json(d) for d in json.loads(line[len(SPEC_MARKER):])]
            except (ValueError, KeyError, TypeError):
                return None
    return None


class OfflineSynthesiser(Generator):
    """Answers `reward` and `mutation` requests deterministically from (seed, sample_index, context) (with a design
    thought in braces when the prompt asks for one), `decompose`, progress-program and `judge` requests
    (bird/llm/offline/plan_synth.py) and `thought_alignment` requests (bird/llm/offline/thought_synth.py)."""

    provider = "offline"
    label = LABEL

    @staticmethod
    def _special(request: Request) -> str | None:
        from bird.llm.offline import plan_synth

        ctx = request.context
        if request.purpose == "judge":
            return plan_synth.answer_judge(ctx, LABEL)
        if request.purpose == "goal_states":
            from bird.llm.offline.demo_synth import answer_goal_states

            return answer_goal_states(ctx, LABEL)
        if request.purpose == "thought_alignment":
            from bird.llm.offline.thought_synth import answer_alignment

            return answer_alignment(ctx, LABEL)
        if request.purpose in ("judge_score", "summary", "subtask_revision") or ctx.get("kind") == "subtask_list":
            from bird.llm.offline import judge_synth

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
        ctx = request.context
        special = self._special(request)
        if special is not None:
            return Response(text=special, model=self.model, input_tokens=0, output_tokens=0, cost_usd=0.0,
                            finish_reason="stop")
        if ctx.get("contract") == "reward_class" and "obs_fields" in ctx:
            from bird.llm.offline.demo_synth import answer_demo_request

            text = answer_demo_request(ctx, request.purpose, self._rng(request), LABEL)
            return Response(text=text, model=self.model, input_tokens=0, output_tokens=0, cost_usd=0.0,
                            finish_reason="stop")
        if request.purpose == "self_verify":
            from bird.llm.offline.operator_synth import answer_operator

            text = answer_operator(request.purpose, ctx, self._rng(request), LABEL) or ""
            return Response(text=text, model=self.model, input_tokens=0, output_tokens=0, cost_usd=0.0,
                            finish_reason="stop")
        if "obs_fields" not in ctx or "task" not in ctx:
            raise LLMError(f"offline synthesiser cannot answer a {request.purpose!r} request without obs_fields/task")
        rng = self._rng(request)
        from bird.llm.offline.operator_synth import answer_operator

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
            from bird.llm.offline.thought_synth import design_thought

            text = "{" + design_thought(terms) + "}\n" + text
        return Response(text=text, model=self.model, input_tokens=0, output_tokens=0, cost_usd=0.0,
                            finish_reason="stop")
