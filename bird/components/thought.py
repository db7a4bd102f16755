"""Design thoughts (registry family design_thought), the parent's thought in the prompt (generate.parent_thought) and
the thought-alignment pass (feedback.thought_alignment): BIRD design choice (3) "thought + parent + alignment".

As RF-Agent does it (release deng-ai-lab/RF-Agent@89bca36, RF_Agent/utils/prompts_rfagent/thought_code_output.txt and
initial_thought_alignment.txt; the MCTS driver): each answer states its design idea in one sentence inside braces,
outside the code; a prompt built on a parent shows the parent's idea next to its code and results; after a successful
training the LLM re-describes the reward from its code in under four sentences, and that description is the idea
shown from then on. Thoughts live in SearchState.thoughts as plain data: {candidate id: {"stated", "aligned"}}.

Methods may word the texts in their templates (slots `design_thought_tip`, `parent_thought`, `thought_alignment_system`,
`thought_alignment_user`); the defaults below are paraphrases of RF-Agent's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from bird.config.roles import judge_temperature
from bird.config.schema import BirdConfig
from bird.llm.base import LLMError, Message, Request
from bird.llm.blocks import outside_blocks
from bird.prompts import templates
from bird.registry import get, register
from bird.state import SearchState
from bird.types import Candidate, Report

__all__ = ["ThoughtStyle", "current_thought", "thought_prompt", "record_thoughts", "align_thoughts", "extract_braced"]

DEFAULT_TIP = ("First, state the design idea and the main steps of your reward function in one sentence, inside braces "
               "{ } and outside the code block. Then write the reward function that implements this idea.")
DEFAULT_PARENT = "The design idea of the reward function above: {thought}"
DEFAULT_ALIGN_SYSTEM = "You describe reward functions for reinforcement learning precisely and briefly."
DEFAULT_ALIGN_USER = (
    "Here is the stated design idea of a reward function and the code that implements it.\n"
    "Design idea: {thought}\nCode:\n```python\n{code}```\n"
    "The stated idea may not say everything the code does. Describe the reward function again in fewer than four "
    "sentences, starting from the stated idea: name its reward components, the observations each is computed from, "
    "their weights or temperatures and how they are combined, and any special idea the code uses. "
    "Answer with the description only.")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_DICT_LIKE = re.compile(r"""\s*["'][^"']*["']\s*:""")  # {"key": ...}: data, not a sentence
_MAX_CHARS = 2000


def _braced_spans(text: str) -> list[str]:
    """Contents of the outermost brace-balanced {...} spans of `text`, in order (an unclosed one is dropped)."""
    spans, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "{":
            depth, start = depth + 1, (i if depth == 0 else start)
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start + 1 : i])
    return spans


def extract_braced(text: str) -> str | None:
    """The first {...} of the prose that reads as a sentence (two words or more, not a {"key": value} pair; nested
    braces kept, doubled braces undone), outside fenced blocks and `inline code`; None if there is none."""
    prose = _INLINE_CODE.sub(" ", outside_blocks(text or ""))
    for span in _braced_spans(prose):
        thought = span.strip()
        while thought.startswith("{") and thought.endswith("}"):
            thought = thought[1:-1].strip()
        if len(thought.split()) >= 2 and not _DICT_LIKE.match(thought):
            return thought[:_MAX_CHARS]
    return None


@dataclass(frozen=True)
class ThoughtStyle:
    """How an answer carries its design thought. `asks`: the prompt asks for one; `extract(answer) -> str | None`."""

    name: str
    asks: bool

    def extract(self, text: str) -> str | None:
        return extract_braced(text) if self.asks else None


register("design_thought", "none")(ThoughtStyle("none", asks=False))
register("design_thought", "inline_brace")(ThoughtStyle("inline_brace", asks=True))


def current_thought(state: SearchState, cid: str | None) -> str | None:
    """The thought shown for a candidate: the aligned one when alignment ran, else the one it stated."""
    rec = state.thoughts.get(cid or "")
    if not rec:
        return None
    return rec.get("aligned") or rec.get("stated")


def thought_prompt(cfg: BirdConfig, state: SearchState, parent: str | None) -> tuple[list[str], dict[str, Any]]:
    """Text appended to the last user message of a generation request, and the context entries of exactly that text:
    the parent's thought (generate.parent_thought) and the instruction to state a thought (generate.design_thought)."""
    t = templates(cfg.generate.prompt)
    pieces: list[str] = []
    context: dict[str, Any] = {}
    shown = current_thought(state, parent) if cfg.generate.parent_thought else None
    if shown:
        pieces.append(t.get("parent_thought", DEFAULT_PARENT).strip().replace("{thought}", shown))
        context["parent_thought"] = shown
    if get("design_thought", cfg.generate.design_thought).asks:
        pieces.append(t.get("design_thought_tip", DEFAULT_TIP).strip())
        context["design_thought"] = cfg.generate.design_thought
    return pieces, context


def record_thoughts(cfg: BirdConfig, state: SearchState, cands: list[Candidate]) -> None:
    """Read each answer's stated thought into state.thoughts (a missing thought is recorded as None)."""
    style = get("design_thought", cfg.generate.design_thought)
    if not style.asks:
        return
    for cand in cands:
        if cand.response:
            state.thoughts[cand.id] = {"stated": style.extract(cand.response), "aligned": None}


def _align_request(cfg: BirdConfig, state: SearchState, cand: Candidate) -> Request:
    t = templates(cfg.generate.prompt)
    thought = (state.thoughts.get(cand.id) or {}).get("stated") or "(no design idea was stated)"
    user = t.get("thought_alignment_user", DEFAULT_ALIGN_USER).replace("{thought}", thought).replace("{code}", cand.code or "")
    return Request(purpose="thought_alignment",
                   messages=(Message("system", t.get("thought_alignment_system", DEFAULT_ALIGN_SYSTEM).strip()),
                             Message("user", user)),
                   context={"thought": thought, "code": cand.code}, temperature=judge_temperature(cfg),
                   max_tokens=cfg.generate.max_tokens, sample_index=cand.index, seed=state.seed)


def _clean(text: str) -> str | None:
    text = (text or "").strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    return text[:_MAX_CHARS] or None


def align_thoughts(cfg: BirdConfig, state: SearchState, cands: list[Candidate], reports: dict[str, Report]) -> None:
    """feedback.thought_alignment: one judge call per trained candidate; the answer becomes its aligned thought.
    The exchange is kept for candidates/<id>/thought.json (state.records); a failed call keeps the stated thought."""
    if not cfg.feedback.thought_alignment:
        return
    todo = [c for c in cands if c.id in reports and c.code is not None]
    requests = [_align_request(cfg, state, c) for c in todo]
    answers = state.judge.complete_many(requests) if requests else []
    for cand, req, answer in zip(todo, requests, answers, strict=True):
        rec = state.thoughts.setdefault(cand.id, {"stated": None, "aligned": None})
        error = str(answer)[:500] if isinstance(answer, LLMError) else None
        rec["aligned"] = None if error else _clean(answer.text)
        state.records.setdefault(cand.id, {})["thought.json"] = {
            "stated": rec["stated"], "aligned": rec["aligned"], "error": error, "prompt": req.messages_json(),
            "response": None if error else answer.text, "judge": state.judge.describe()}
