"""Which expert states are positives (registry family positive_states, key demos.positive_states):

- all: every expert state;
- last_state: the last state of each expert trajectory (GRACE §5.1, BabyAI: the env terminates on success);
- goal_identified: GRACE P0.1 (App. A.7): the generator reads each expert trajectory and names its goal states
  (1-based indices, or -1 for none). An answer that cannot be read falls back to the last state, recorded;
- last_if_terminal: last_state on a task whose episodes end on success (GRACE §5.1 gives that as its reason for the
  rule on BabyAI), goal_identified elsewhere.

Expert states that are not positives become negatives when demos.unidentified_as_negative is set (GRACE §4, data
cleaning: S_n = (D+ \\ S_e) ∪ D-), else they are dropped (label 0). Each labeller reads `states` (n, T, obs_dim)
and `length` (n,), the steps of each trajectory (one that ended early, a fall, is padded to T), and returns (labels
(n, T) in {+1, -1, 0}, one record per trajectory for demos.json).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bird.components.demo_views import state_dict
from bird.config.schema import BirdConfig
from bird.envs.base import TaskSpec
from bird.envs.registry import ends_on_success
from bird.llm.base import Generator, LLMError, Message, Request
from bird.llm.parsing import AnswerParseError, parse_json_answer
from bird.prompts import obs_fields_context, system_template, templates
from bird.registry import register

__all__ = ["goal_request", "read_goal_indexes"]

Labels = tuple[np.ndarray, list[dict[str, Any]]]


def _other(cfg: BirdConfig) -> int:
    return -1 if cfg.demos.unidentified_as_negative else 0


def _lengths(states: np.ndarray, length: np.ndarray | None) -> np.ndarray:
    return np.full(states.shape[0], states.shape[1]) if length is None else np.asarray(length)


@register("positive_states", "all")
def _all(cfg: BirdConfig, spec: TaskSpec, states: np.ndarray, generator: Generator,
         length: np.ndarray | None = None) -> Labels:
    return np.ones(states.shape[:2], dtype=int), []


@register("positive_states", "last_state")
def _last_state(cfg: BirdConfig, spec: TaskSpec, states: np.ndarray, generator: Generator,
                length: np.ndarray | None = None) -> Labels:
    label = np.full(states.shape[:2], _other(cfg), dtype=int)
    label[np.arange(len(label)), _lengths(states, length) - 1] = 1
    return label, []


def goal_request(cfg: BirdConfig, spec: TaskSpec, states: np.ndarray, episode: int, seed: int) -> Request:
    """P0.1 for one expert trajectory (states (T, obs_dim)): one row every demos.stride states and the last."""
    t = templates(cfg.generate.prompt)
    keep = [i for i in range(len(states)) if i % cfg.demos.stride == 0 or i == len(states) - 1]
    rows = [{"index": i + 1, "state": state_dict(spec, states[i])} for i in keep]
    text = "\n".join(f"state {r['index']}: " + ", ".join(f"{k}={v}" for k, v in r["state"].items()) for r in rows)
    user = t["goal_states"].format(reward_code="(no reward code yet)", n_states=len(states),
                                   stride=cfg.demos.stride, trajectory=text)
    context = {"obs_fields": obs_fields_context(spec, cfg.generate.field_view), "trajectory": rows,
               "n_states": len(states)}
    return Request(purpose="goal_states", messages=(Message("system", system_template(t, spec.suite)),
                                                    Message("user", user)),
                   context=context, temperature=cfg.generate.temperature, max_tokens=cfg.generate.max_tokens,
                   sample_index=episode, seed=seed)


def read_goal_indexes(text: str, n_states: int) -> tuple[list[int] | None, str]:
    """(0-based goal state indices, or [] for -1; None when the answer cannot be used) and why."""
    try:
        answer = parse_json_answer(text)
    except AnswerParseError as exc:
        return None, f"unreadable answer: {exc}"
    raw = answer.get("goal_state_indexes") if isinstance(answer, dict) else None
    raw = [raw] if isinstance(raw, int) and not isinstance(raw, bool) else raw
    if not isinstance(raw, list) or not raw or not all(isinstance(i, int) and not isinstance(i, bool) for i in raw):
        return None, f"goal_state_indexes must be a list of integers, got {raw!r}"
    if raw == [-1]:
        return [], "no goal state (-1)"
    bad = [i for i in raw if not 1 <= i <= n_states]
    if bad:
        return None, f"indices {bad} are outside 1..{n_states}"
    return sorted({i - 1 for i in raw}), "identified"


@register("positive_states", "goal_identified")
def _goal_identified(cfg: BirdConfig, spec: TaskSpec, states: np.ndarray, generator: Generator,
                     length: np.ndarray | None = None) -> Labels:
    n, t = states.shape[:2]
    steps = _lengths(states, length)
    label = np.full((n, t), _other(cfg), dtype=int)
    requests = [goal_request(cfg, spec, states[e, : steps[e]], e, cfg.demos.seed) for e in range(n)]
    records = []
    for e, answer in enumerate(generator.complete_many(requests)):
        if isinstance(answer, LLMError):
            goals, why = None, f"request failed: {answer}"
        else:
            goals, why = read_goal_indexes(answer.text, int(steps[e]))
        if goals is None:  # fall back to the last state (the BabyAI rule), recorded
            goals, why = [int(steps[e]) - 1], f"fallback to the last state ({why})"
        label[e, goals] = 1
        records.append({"episode": e, "goal_steps": [g + 1 for g in goals], "how": why})
    return label, records


@register("positive_states", "last_if_terminal")
def _last_if_terminal(cfg: BirdConfig, spec: TaskSpec, states: np.ndarray, generator: Generator,
                      length: np.ndarray | None = None) -> Labels:
    rule = _last_state if ends_on_success(cfg.env) else _goal_identified
    return rule(cfg, spec, states, generator, length)
