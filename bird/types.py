"""Record types shared by every stage, learner and generator."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bird.state_codec import register_saved

__all__ = [
    "FailureKind",
    "Failure",
    "Candidate",
    "VerifyResult",
    "Checkpoint",
    "TrainResult",
    "Report",
]


@register_saved
class FailureKind(StrEnum):
    """Why a candidate did not produce a usable result. Skipped != failed != screened != timed out."""

    LLM_ERROR = "llm_error"  # the generator could not answer (retries exhausted)
    TRUNCATED = "truncated"  # the provider cut the answer at its output limit (max_tokens): nothing of it is compiled
    REFUSED = "refused"  # the model or the provider refused to answer (stop reason refusal, a refusal field)
    INCOMPLETE = "incomplete"  # the provider stopped the answer early: content filter, tool call, unknown stop reason
    PARSE_ERROR = "parse_error"  # no code could be extracted from the answer
    AMBIGUOUS_ANSWER = "ambiguous_answer"  # the answer offers several different programs; bird does not guess
    COMPILE_ERROR = "compile_error"  # the code is not valid Python
    REJECTED = "rejected"  # static checks refused the program (imports, files, leaks, ...)
    BAD_SIGNATURE = "bad_signature"  # the entry point is missing or has the wrong arguments
    RUNTIME_ERROR = "runtime_error"  # the program raised
    TIMEOUT = "timeout"  # the program or the training ran past its time limit
    NON_FINITE = "non_finite"  # reward or a component was NaN or infinite
    BAD_OUTPUT = "bad_output"  # wrong return type or shape
    SCREENED = "screened"  # a verify screen decided not to train it
    OPERATOR_ERROR = "operator_error"  # a programmatic operator (crossover) could not build a program from its parents
    TRAIN_ERROR = "train_error"  # the learner itself failed
    SKIPPED = "skipped"  # not attempted (budget exhausted)


@register_saved
@dataclass(frozen=True)
class Failure:
    kind: FailureKind
    reason: str
    detail: str = ""

    def to_json(self) -> dict[str, str]:
        return {"kind": str(self.kind), "reason": self.reason, "detail": self.detail}


@register_saved
@dataclass
class Candidate:
    """One reward program proposed by a generator, as it moves through the stages."""

    id: str  # "it{iteration}-c{index}", unique in a run
    iteration: int  # 1-based
    index: int  # 0-based within the iteration
    messages: list[dict[str, Any]]  # the rendered prompt, [{role, content}]
    response: str = ""  # raw generator answer
    code: str | None = None  # extracted reward program
    parent_id: str | None = None
    failure: Failure | None = None
    operator: str = "sample"  # how it was made: "sample" (the method's prompt) or a registry operator / crossover
    co_parents: tuple[str, ...] = ()  # further parents (crossover), after parent_id
    llm: dict[str, Any] = field(default_factory=dict)  # model, tokens, cost, latency, cached
    attempts: int = 1  # answers requested for this candidate (1 + blind resamples)
    resampled: list[dict[str, Any]] = field(default_factory=list)  # the failure of each answer that was re-asked
    request: Any = field(default=None, repr=False, compare=False)  # the Request it answers (not saved)
    verified: VerifyResult | None = field(default=None, repr=False, compare=False)  # checks already run

    @property
    def screened(self) -> bool:
        return self.failure is not None and self.failure.kind == FailureKind.SCREENED

    @property
    def alive(self) -> bool:
        return self.failure is None


@register_saved
@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    failure: Failure | None
    components: tuple[str, ...] = ()
    checks: dict[str, Any] = field(default_factory=dict)


@register_saved
@dataclass(frozen=True)
class Checkpoint:
    """Evaluation of the policy at one point of training. Scores are per-episode means."""

    env_steps: int
    score: float  # benchmark score, normalised (uniform-random policy = 0)
    quantity: float  # the raw physical quantity behind the score
    own_return: float  # episodic return under the candidate reward (training episodes)
    reference_return: float  # episodic return under the env's shipped reward (never shown to generators)
    episode_length: float
    components: dict[str, float] = field(default_factory=dict)  # mean per-step value of each reward term
    eval_own_return: float = math.nan  # own-reward return on the greedy evaluation episodes (when a rule reads it)
    eval_reference_return: float = math.nan  # shipped-reward return on the greedy evaluation episodes (NaN: not measured)


@register_saved
@dataclass(frozen=True)
class TrainResult:
    candidate_id: str
    seed: int
    curve: tuple[Checkpoint, ...]
    env_steps: int
    wall_s: float
    failure: Failure | None = None
    policy_path: str | None = None
    rollouts_path: str | None = None  # rollouts.npz of the trained policy (train.collect_episodes)
    shipped: int = -1  # index in `curve` of the checkpoint whose parameters were kept (train.checkpoint_selection)
    checkpoint_choice: dict[str, Any] = field(default_factory=dict)  # which checkpoint won and why
    videos: tuple[str, ...] = ()  # MP4 clips of the trained policy's evaluation episodes (video.record)

    @property
    def ok(self) -> bool:
        return self.failure is None and len(self.curve) > 0

    @property
    def shipped_checkpoint(self) -> Checkpoint:
        """The evaluation of the parameters this training ships (rolled out, saved, retrained scores)."""
        return self.curve[self.shipped]


@register_saved
@dataclass(frozen=True)
class Report:
    """Feedback-stage output for one candidate: its fitness and what the generator will be shown."""

    candidate_id: str
    fitness: float | None  # None when the method ranks nothing or the candidate failed
    feedback: str  # text for the next prompt
    stats: dict[str, Any] = field(default_factory=dict)
    fitness_source: str | None = None  # the fitness that ranked it, resolved (feedback.fitness=native -> per suite)
