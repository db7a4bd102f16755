"""Demonstrations as a search input: expert (positive) and negative states with their episode structure, a
train/test split, scoring a candidate's reward on them in the sandbox, and learner rollouts as new negatives."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import reduce
from typing import Any

import numpy as np

from bird.components.demo_fitness import worst_rows
from bird.config.schema import BirdConfig
from bird.config.validate_task import demo_expert
from bird.envs.base import TaskSpec
from bird.envs.demos import ExpertSource, load_demos
from bird.executors import Executor
from bird.learners.expert import ppo_expert
from bird.learners.job import TrainJob, make_job
from bird.learners.rollouts import load_rollouts
from bird.llm.base import Generator
from bird.registry import get
from bird.reward.factory import open_program
from bird.reward.sandbox import RewardProgramError, SandboxedReward
from bird.rundir import RunDir
from bird.state import SearchState
from bird.state_codec import register_saved
from bird.types import Candidate, TrainResult

__all__ = ["Episodes", "DemoSet", "DemoScores", "expert_source", "load_demo_set", "score_candidate", "expand_negatives"]


@register_saved
@dataclass
class Episodes:
    """States of several episodes, flattened episode-major. The state of a row is the observation reached."""

    states: np.ndarray  # (N, obs_dim)
    episode: np.ndarray  # (N,) episode number within this set
    step: np.ndarray  # (N,) step within its episode (0-based)
    label: np.ndarray  # (N,) +1 positive, -1 negative, 0 dropped (not scored into fitness)
    source: list[str]  # per episode: "expert" | "random" | "learner:<candidate id>"

    @property
    def dones(self) -> np.ndarray:
        out = np.zeros(len(self.episode), dtype=bool)
        out[:-1] = self.episode[1:] != self.episode[:-1]
        out[-1:] = True
        return out

    def extend(self, other: Episodes) -> Episodes:
        shift = int(self.episode.max()) + 1 if len(self.episode) else 0
        return Episodes(np.concatenate([self.states, other.states]), np.concatenate([self.episode, other.episode + shift]),
                        np.concatenate([self.step, other.step]), np.concatenate([self.label, other.label]),
                        self.source + other.source)


@register_saved
@dataclass
class DemoSet:
    train: Episodes
    test: Episodes | None
    meta: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        def count(e: Episodes | None) -> dict[str, int]:
            if e is None:
                return {}
            return {"episodes": len(e.source), "positive_states": int((e.label > 0).sum()),
                    "negative_states": int((e.label < 0).sum()), "dropped_states": int((e.label == 0).sum())}

        return {**self.meta, "train": count(self.train), "test": count(self.test),
                "sources": sorted(set(self.train.source))}


@register_saved
@dataclass(frozen=True)
class DemoScores:
    """A reward's value on every state of one split, with the split and the debug_fn output of asked rows."""

    episodes: Episodes
    reward: np.ndarray  # (N,)
    debug: dict[int, str] = field(default_factory=dict)

    @property
    def positives(self) -> np.ndarray:
        return self.reward[self.episodes.label > 0]

    @property
    def negatives(self) -> np.ndarray:
        return self.reward[self.episodes.label < 0]


def _episodes(states: np.ndarray, label: np.ndarray, source: str, valid: np.ndarray | None = None) -> Episodes:
    """Episodes from (n, T, dim) states, leaving out the padding of episodes shorter than T (`valid` False)."""
    n, t, _ = states.shape
    keep = np.ones(n * t, dtype=bool) if valid is None else valid.reshape(-1)
    return Episodes(states.reshape(n * t, -1).astype(np.float64)[keep], np.repeat(np.arange(n), t)[keep],
                    np.tile(np.arange(t), n)[keep], label.reshape(-1)[keep], [source] * n)


def _split(e: Episodes, n_train: int) -> tuple[Episodes, Episodes | None]:
    """The first n_train episodes train, the rest test (None when nothing is left)."""
    n = len(e.source)
    cut = min(n, max(n_train, 1))
    if cut == n:
        return e, None
    tr, te = e.episode < cut, e.episode >= cut
    return (Episodes(e.states[tr], e.episode[tr], e.step[tr], e.label[tr], e.source[:cut]),
            Episodes(e.states[te], e.episode[te] - cut, e.step[te], e.label[te], e.source[cut:]))


def _n_train(cfg: BirdConfig, n: int) -> int:
    """Train episodes of one kind: half of demos.max_train (expert and negative share it), else by test_fraction."""
    d = cfg.demos
    return d.max_train // 2 if d.max_train is not None else n - int(n * d.test_fraction)


def expert_source(cfg: BirdConfig, pool: Executor | None) -> ExpertSource | None:
    """The expert demos.expert picks for the task: None for its scripted expert, else the PPO expert on its reference
    reward (bird/learners/expert.py), trained by `pool` (in this process without one) when not cached."""
    suite = cfg.env.id.partition("/")[0]
    if demo_expert(cfg.demos.expert, get("suite", suite).offers(cfg.env), cfg.env.id) == "scripted":
        return None

    def run(job: TrainJob) -> TrainResult:
        if pool is not None:
            return pool.run("sb3_ppo", [job])[0]
        from bird.learners.sb3_ppo import train_ppo

        return train_ppo(job)

    return ppo_expert(cfg.env, cfg.budget.expert_env_steps, cfg.demos.expert_seed, run)


def load_demo_set(cfg: BirdConfig, spec: TaskSpec, generator: Generator | None = None,
                  pool: Executor | None = None) -> DemoSet:
    """Expert (demos.expert: scripted, or a cached PPO expert that `pool` trains when missing) and negative
    demonstrations (envs/demos.py), labelled by demos.positive_states (registry family positive_states;
    goal_identified asks `generator`), split by episode into train and test."""
    d = cfg.demos
    source = expert_source(cfg, pool)
    expert = load_demos(cfg.env.id, d.n_expert, d.seed, "expert", expert=source)
    negative = load_demos(cfg.env.id, d.n_negative, d.seed, d.negative_kind)
    label, goals = get("positive_states", d.positive_states)(cfg, spec, expert.next_obs, generator,
                                                             length=expert.valid.sum(axis=1))
    pos = _episodes(expert.next_obs, label, "expert", expert.valid)
    neg = _episodes(negative.next_obs, np.full(negative.next_obs.shape[:2], -1), d.negative_kind, negative.valid)
    (pos_tr, pos_te), (neg_tr, neg_te) = _split(pos, _n_train(cfg, d.n_expert)), _split(neg, _n_train(cfg, d.n_negative))
    held_out = [e for e in (pos_te, neg_te) if e is not None]  # a kind with nothing held out adds nothing
    test = reduce(Episodes.extend, held_out) if held_out else None
    meta = {"env": cfg.env.id, "n_expert": d.n_expert, "n_negative": d.n_negative, "seed": d.seed,
            "negative_kind": d.negative_kind, "positive_states": d.positive_states, "stride": d.stride, "n_shown": d.n_shown,
            "max_train": d.max_train, "expert": source.description if source else "the task's scripted expert",
            "expert_success_rate": expert.success_rate,
            "negative_success_rate": negative.success_rate, **({"goal_states": goals} if goals else {})}
    return DemoSet(pos_tr.extend(neg_tr), test, meta)


def score_episodes(program: SandboxedReward, spec: TaskSpec, eps: Episodes,
                   debug_rows: list[int] | None = None) -> DemoScores:
    """Run the open program over every episode in order (stateful contracts restart at each episode's first state)."""
    states = eps.states
    reward, _ = program(states, np.zeros((len(states), spec.action_dim)), states, dones=eps.dones, reset=True,
                        debug_rows=debug_rows)
    return DemoScores(eps, reward, dict(program.last_debug))


def score_candidate(cfg: BirdConfig, state: SearchState, cand: Candidate) -> tuple[DemoScores | None, DemoScores | None]:
    """(train, test) scores of a candidate, from one isolated worker; the train pass is rerun with debug_fn on the
    worst-scored states. A program that fails on the demonstrations gets its failure recorded and (None, None)."""
    assert cand.code is not None
    demos = state.demos
    try:
        with open_program(cand.code, state.spec, cfg.verify, cfg.reward, bulk=True) as program:
            first = score_episodes(program, state.spec, demos.train)
            rows = worst_rows(first, cfg.feedback.n_wrong_examples, cand.id)
            train = score_episodes(program, state.spec, demos.train, rows) if rows else first
            test = score_episodes(program, state.spec, demos.test) if demos.test is not None else None
    except RewardProgramError as exc:
        cand.failure = exc.failure
        return None, None
    state.demo_scores[cand.id] = train
    return train, test


def expand_negatives(cfg: BirdConfig, state: SearchState, pool: Executor, run: RunDir) -> None:
    """GRACE's DataExpandRL: train the global best with final.learner and add its rollouts to the negatives."""
    best = state.global_best
    if best is None:
        return
    out_dir = run.root / "expand" / f"it{state.iteration}"
    out_dir.mkdir(parents=True, exist_ok=True)
    job = make_job(cfg, f"expand-it{state.iteration}", state.candidates[best].code, state.seed, state.plan.env_steps,
                   out_dir, collect_episodes=max(cfg.train.collect_episodes, 2))
    result = pool.run(cfg.final.learner or cfg.train.learner, [job])[0]
    state.env_steps += result.env_steps
    if result.failure is not None or not result.rollouts_path:
        run.event("negatives_expanded", candidate=best, added=0, failure=result.failure.to_json() if result.failure else None)
        return
    data = load_rollouts(result.rollouts_path)
    ep = data["episode"]
    step = np.concatenate([np.arange(n) for n in data["length"]])
    new = Episodes(data["next_obs"].astype(np.float64), ep, step, np.full(len(ep), -1), [f"learner:{best}"] * len(data["length"]))
    state.demos.train = state.demos.train.extend(new)
    run.event("negatives_expanded", candidate=best, added=int(len(ep)), episodes=int(len(data["length"])))
