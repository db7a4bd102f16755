"""The one way to open a reward program in the sandbox, from a config section, a training job or any object with the
same fields."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bird.envs.base import ObsIndex, TaskSpec
from bird.reward.languages import get_language
from bird.reward.sandbox import SandboxedReward, WorkerProcess

__all__ = ["open_program", "preflight", "ProgramLimits", "BULK_TIMEOUT_S"]

BULK_TIMEOUT_S = 30.0  # the least per-call limit when one call scores a whole store of transitions


class Limits(Protocol):
    """VerifyConfig, TrainJob, EpicSettings: the per-call time and memory limits."""

    @property
    def call_timeout_s(self) -> float: ...

    @property
    def memory_mb(self) -> int: ...


@dataclass(frozen=True)
class ProgramLimits:
    """Limits given directly (Limits)."""

    call_timeout_s: float = 5.0
    memory_mb: int = 2048


class Kind(Protocol):
    """RewardConfig, TrainJob: the program's contract and language."""

    @property
    def contract(self) -> str: ...

    @property
    def language(self) -> str | None: ...


_READY: set[str] = set()


def preflight(language: str = "numpy") -> None:
    """Start one isolated worker of `language` and close it, once per process: where the sandbox cannot start here (an
    install it cannot read after its identity drop, say), SandboxSetupError says what to change before any LLM call or
    training is spent."""
    if language not in _READY:
        WorkerProcess(get_language(language), 2048, 5.0).close()
        _READY.add(language)


def open_program(code: str, task: TaskSpec | ObsIndex, limits: Limits, kind: Kind | None = None, *,
                 contract: str | None = None, language: str | None = None, bulk: bool = False) -> SandboxedReward:
    """`code` loaded in its own isolated worker, for the task's observation index (and action size, which a jax
    program is exported for).

    :param limits: per-call time and memory limits; :param kind: contract and language (default: a numpy
    compute_reward program); `contract` and `language` override it; :param bulk: one call scores a whole store of
    transitions, so the time limit is at least BULK_TIMEOUT_S.
    """
    obs_index = task.obs_index if isinstance(task, TaskSpec) else task
    action_dim = task.action_dim if isinstance(task, TaskSpec) else None
    timeout = max(limits.call_timeout_s, BULK_TIMEOUT_S) if bulk else limits.call_timeout_s
    return SandboxedReward(code, obs_index, timeout, limits.memory_mb,
                           contract=contract or (kind.contract if kind else "compute_reward"),
                           language=language or (kind.language if kind else None) or "numpy",
                           action_dim=action_dim)
