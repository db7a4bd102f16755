"""Trajectory segments and who labels them (registry family segment_labeller).

`critic_population_vote` (R*): alignment.critics LLM-written critic programs, authored once (the first time the
trajectory store has episodes) and kept for the whole search. A critic is a program in the reward contract whose
per-step output, summed over a segment, says how far that segment advances the task; each critic votes for the
segment it scores higher. A pair is labelled when at least `rung` critics agree, for the strictest rung of
alignment.vote_ladder that labels alignment.min_pairs pairs (else the last rung) [INF: the release's ladder]."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from bird.components.context import initial_user_message
from bird.config.schema import BirdConfig
from bird.llm.base import Generator, LLMError, Message, Request
from bird.prompts import obs_fields_context, system_template, templates
from bird.registry import get, register
from bird.reward.checks import verify_code
from bird.reward.contracts import read_answer
from bird.reward.factory import open_program
from bird.reward.sandbox import RewardProgramError
from bird.state import SearchState

__all__ = ["cut_segments", "sample_pairs", "author_critics", "critic_votes", "ladder_labels"]


def cut_segments(store: Any, target: int, min_len: int, rng: random.Random) -> list[np.ndarray]:
    """Up to `target` windows of L = max(min_len, min(50, rows // target)) consecutive steps inside single
    episodes, at seeded random starts [ours]; each is an array of store row indices."""
    length = max(min_len, min(50, len(store.episode) // max(1, target)))
    starts = []
    for ep in range(len(store)):
        idx = np.flatnonzero(store.episode == ep)
        starts += [(int(idx[0]) + s) for s in range(0, len(idx) - length + 1)]
    if not starts:
        return []
    chosen = sorted(rng.sample(starts, min(target, len(starts))))
    return [np.arange(s, s + length) for s in chosen]


def sample_pairs(n_segments: int, max_pairs: int, rng: random.Random) -> np.ndarray:
    """Up to max_pairs distinct unordered pairs of segments, seeded (shape (m, 2))."""
    every = [(i, j) for i in range(n_segments) for j in range(i + 1, n_segments)]
    chosen = rng.sample(every, min(max_pairs, len(every)))
    return np.array(chosen, dtype=int).reshape(-1, 2)


def _critic_request(cfg: BirdConfig, state: SearchState, index: int) -> Request:
    t = templates(cfg.generate.prompt)
    if "critic_user" not in t:
        raise ValueError(f"alignment.labeller=critic_population_vote needs methods/{cfg.generate.prompt}/critic_user.txt")
    user, shown = initial_user_message(cfg.generate.prompt, cfg.generate.env_representation, state,
                                       cfg.generate.field_view, name="critic_user",
                                       extra={"code_output_tip": t.get("code_output_tip", "")})
    system = t.get("critic_system", system_template(t, state.spec.suite)).format(signature=t.get("signature", ""), action_dim=state.spec.action_dim,
                                                        code_output_tip=t.get("code_output_tip", ""))
    context = {"obs_fields": obs_fields_context(state.spec, cfg.generate.field_view), "action_dim": state.spec.action_dim,
               "contract": "compute_reward", "critic": index, **shown}
    return Request("critic", (Message("system", system), Message("user", user)), context,
                   temperature=cfg.generate.temperature, max_tokens=cfg.generate.max_tokens, sample_index=index,
                   seed=state.seed)


def author_critics(cfg: BirdConfig, state: SearchState, generator: Generator) -> None:
    """Ask for alignment.critics critic programs once; each is checked like a reward (a failing one is kept in the
    record, and casts no vote)."""
    if state.critics:
        return
    requests = [_critic_request(cfg, state, i) for i in range(cfg.alignment.critics)]
    contract = get("contract", "compute_reward")
    for i, (req, answer) in enumerate(zip(requests, generator.complete_many(requests), strict=True)):
        record: dict[str, Any] = {"id": f"critic{i}", "code": None, "ok": False, "failure": None,
                                  "prompt": req.messages_json()}
        if isinstance(answer, LLMError):
            record["failure"] = f"llm_error: {answer}"[:500]
        else:
            record["response"] = answer.text
            reading = read_answer(contract, answer, req.max_tokens)
            record["code"] = reading.code
            if reading.failure is not None:
                record["failure"] = f"{reading.failure.kind}: {reading.failure.reason}"[:500]
            else:
                result = verify_code(record["code"], cfg, state.smoke_batch, state.spec)
                record["ok"] = result.ok
                record["failure"] = None if result.ok else f"{result.failure.kind}: {result.failure.reason}"
        state.critics.append(record)


def critic_votes(cfg: BirdConfig, state: SearchState, segments: list[np.ndarray], pairs: np.ndarray) -> np.ndarray:
    """(critics, pairs) votes: +1 when the critic scores the first segment higher, −1 the second, 0 a tie or a
    critic that failed on the segments."""
    store = state.trajectories
    rows = np.concatenate(segments)
    seg = np.repeat(np.arange(len(segments)), [len(s) for s in segments])
    votes = []
    for critic in (c for c in state.critics if c["ok"]):
        try:
            with open_program(critic["code"], state.spec, cfg.verify, bulk=True) as program:
                score, _ = program(store.obs[rows], store.actions[rows], store.next_obs[rows])
        except RewardProgramError as exc:
            critic["runtime_failure"] = exc.failure.reason
            votes.append(np.zeros(len(pairs)))
            continue
        sums = np.bincount(seg, weights=score, minlength=len(segments))
        votes.append(np.sign(sums[pairs[:, 0]] - sums[pairs[:, 1]]))
    return np.array(votes).reshape(-1, len(pairs))


def ladder_labels(votes: np.ndarray, pairs: np.ndarray, ladder: list[int], min_pairs: int) -> tuple[np.ndarray, dict]:
    """(winner, loser) pairs at the strictest rung of `ladder` that labels min_pairs pairs (else the last rung)."""
    up, down = (votes > 0).sum(axis=0), (votes < 0).sum(axis=0)
    out, used = np.zeros((0, 2), dtype=int), None
    for rung in ladder:
        win_first, win_second = up >= rung, down >= rung
        out = np.concatenate([pairs[win_first], pairs[win_second][:, ::-1]]).reshape(-1, 2)
        used = rung
        if len(out) >= min_pairs:
            break
    return out, {"rung": used, "labelled": int(len(out)), "pairs_shown": int(len(pairs)),
                 "critics_voting": int(len(votes))}


@register("segment_labeller", "critic_population_vote")
def _critic_population_vote(cfg: BirdConfig, state: SearchState, generator: Generator, segments: list[np.ndarray],
                            pairs: np.ndarray) -> dict[str, Any]:
    author_critics(cfg, state, generator)
    if not segments or len(pairs) == 0:
        return {"pairs": np.zeros((0, 2), dtype=int), "record": {"labelled": 0, "reason": "no segments"}}
    votes = critic_votes(cfg, state, segments, pairs)
    labelled, record = ladder_labels(votes, pairs, cfg.alignment.vote_ladder, cfg.alignment.min_pairs)
    return {"pairs": labelled, "record": record}
