"""Summarised feedback (registry family summarisation, feedback.summarisation): an LLM pass, by the judge role,
that condenses each candidate's feedback before the generator is shown it. BIRD choice (18) "summarized feedback"
(BIRD paper Fig. 5), RDA's `summarisation: per_candidate_per_subtask` (safety-research/bird@54a9ce3:configs/methods/rda.yaml).

- none: the feedback as the format wrote it.
- per_candidate: one summary of the whole feedback text.
- per_candidate_per_subtask: one summary per subtask of the feedback's per-subtask evidence (the subtask_judge format's
  judgements) plus the reward-component lines; a format without subtasks is summarised as one "task" subtask.
- appended: one summary of the whole feedback, shown after it (the release's summary of a candidate no judge scored:
  safety-research/bird@54a9ce3:bird/components/evaluation.py `_section_summary` appends it to the rollout digest).

The summary replaces the text shown (`appended`: follows it); the raw text and every exchange go to candidates/<id>/summary.json. The structured
context of a summarised report carries only the summary (what the generator is shown)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bird.config.roles import judge_temperature
from bird.config.schema import BirdConfig
from bird.llm.base import LLMError, Message, Request
from bird.prompts import templates
from bird.registry import get, register
from bird.state import SearchState
from bird.types import Candidate

__all__ = ["summarise"]

SYSTEM = ("You condense the results of training a policy with a candidate reward function into a short, precise "
          "summary for the engineer who will rewrite the reward. Keep the numbers that matter; drop repetition.")
USER = ("Task: {task}\n{focus}\nFeedback on the reward function:\n{evidence}\n\nSummarise this feedback in at most five "
        "sentences: what the policy achieves and fails to achieve, which reward components barely change or dominate, "
        "and what that suggests for the next reward. Answer with the summary only.")


@dataclass(frozen=True)
class Summarisation:
    name: str
    per_subtask: bool
    appends: bool = False  # the feedback stays shown, the summary after it


register("summarisation", "none")(Summarisation("none", per_subtask=False))
register("summarisation", "appended", needs_judge=True)(Summarisation("appended", per_subtask=False, appends=True))
register("summarisation", "per_candidate", needs_judge=True)(Summarisation("per_candidate", per_subtask=False))
register("summarisation", "per_candidate_per_subtask", needs_judge=True)(
    Summarisation("per_candidate_per_subtask", per_subtask=True))


def _pieces(text: str, stats: dict[str, Any], per_subtask: bool) -> list[tuple[str | None, str]]:
    """(subtask name or None, evidence) of each summary to ask for."""
    subtasks = stats.get("subtasks") if per_subtask else None
    if not subtasks:
        return [(None, text)]
    comp_lines = [ln for ln in text.splitlines() if ln.startswith("- ")]
    out = []
    for i, sub in enumerate(subtasks, start=1):
        lines = [f"{i}. {sub['name']}: judge score {sub['score']}"]
        lines += [f"- rollout {j['rollout']}, judgement {j['repeat']}: score {j['raw']}. Behaviour: {j['behaviour']} "
                  f"Rationale: {j['rationale']}" for j in sub["judgements"]]
        out.append((sub["name"], "\n".join(lines + ["Reward components per step (max / mean / min / std):", *comp_lines])))
    return out


def _request(cfg: BirdConfig, state: SearchState, cand: Candidate, subtask: str | None, evidence: str,
             stats: dict[str, Any], k: int) -> Request:
    t = templates(cfg.generate.prompt)
    focus = f"Summarise only what concerns the subtask: {subtask}.\n" if subtask else ""
    user = t.get("summary_user", USER).format(task=state.spec.description, focus=focus, evidence=evidence)
    return Request(purpose="summary", messages=(Message("system", t.get("summary_system", SYSTEM).strip()),
                                                Message("user", user)),
                   context={"task": state.spec.description, "subtask": subtask, "feedback_text": evidence,
                            "feedback": stats},
                   temperature=judge_temperature(cfg),
                   max_tokens=cfg.generate.max_tokens, sample_index=cand.index * 100 + k, seed=state.seed)


def summarise(cfg: BirdConfig, state: SearchState, cand: Candidate, text: str,
              stats: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(text, stats) to show for a candidate: unchanged for `none`; else the summary and {"summary": ...} only (with
    `appended`, the text and its statistics followed by the summary).
    A failed summary call shows that piece's raw evidence instead (recorded)."""
    how: Summarisation = get("summarisation", cfg.feedback.summarisation)
    if how.name == "none" or not stats:
        return text, stats
    pieces = _pieces(text, stats, how.per_subtask)
    requests = [_request(cfg, state, cand, name, evidence, stats, k) for k, (name, evidence) in enumerate(pieces)]
    answers = state.judge.complete_many(requests)
    parts, calls = [], []
    for (name, evidence), req, answer in zip(pieces, requests, answers, strict=True):
        failed = isinstance(answer, LLMError)
        summary = evidence if failed else answer.text.strip()
        parts.append({"subtask": name, "summary": summary, "failed": failed})
        calls.append({"subtask": name, "prompt": req.messages_json(), "response": None if failed else answer.text,
                      "error": str(answer)[:500] if failed else None})
    shown = "Summary of the feedback on this reward function:\n" + "\n".join(
        (f"- {p['subtask']}: " if p["subtask"] else "") + p["summary"] for p in parts)
    if how.appends:
        shown = f"{text}\n\n{shown}"
    state.records.setdefault(cand.id, {})["summary.json"] = {"how": how.name, "raw": text, "shown": shown,
                                                             "calls": calls, "judge": state.judge.describe()}
    return shown, ({**stats, "summary": parts} if how.appends else {"summary": parts})
