"""Candidates per iteration (registry family schedule, generate.schedule) and the policy-training budget
(budget.max_policy_trainings).

- constant: K every iteration (the default; Eureka's 8 × 5).
- taper / ramp: the same K·T candidates, halving from the first iteration with the last repeated (taper), or the
  reverse (ramp): BIRD paper Table 6 (Eureka, 80 candidates: taper (40, 20, 10, 5, 5), ramp (5, 5, 10, 20, 40));
  Fig. 10 is the same budget-arrangement question for 16 candidates.
- explicit: generate.schedule_values, one count per iteration (BIRD's hill-climb, e.g. [10, 8, 6, 5, 4, 3, 2, 2]).
"""

from __future__ import annotations

from collections.abc import Sequence

from bird.config.schema import BudgetConfig
from bird.registry import register

__all__ = ["apportion", "remaining_trainings"]


def apportion(total: int, weights: Sequence[float]) -> list[int]:
    """`total` split in proportion to `weights` (largest remainder, ties to the earlier entry), each at least 1."""
    raw = [total * w / sum(weights) for w in weights]
    out = [int(r) for r in raw]
    order = sorted(range(len(raw)), key=lambda i: (-(raw[i] - out[i]), i))
    for i in order[: total - sum(out)]:
        out[i] += 1
    for i in range(len(out)):
        if out[i] < 1:
            donor = max(range(len(out)), key=lambda j: (out[j], -j))
            out[donor] -= 1
            out[i] = 1
    return out


def _halving(t: int) -> list[float]:
    """2^(T-2), ..., 2, 1, 1 (the last iteration repeats the smallest share)."""
    return [1.0] if t == 1 else [2.0 ** (t - 2 - i) for i in range(t - 1)] + [1.0]


@register("schedule", "constant")
def _constant(k: int, t: int, values: Sequence[int]) -> list[int]:
    return [k] * t


@register("schedule", "taper")
def _taper(k: int, t: int, values: Sequence[int]) -> list[int]:
    return apportion(k * t, _halving(t))


@register("schedule", "ramp")
def _ramp(k: int, t: int, values: Sequence[int]) -> list[int]:
    return _taper(k, t, values)[::-1]


@register("schedule", "explicit", reads_values=True)
def _explicit(k: int, t: int, values: Sequence[int]) -> list[int]:
    if len(values) < t:
        raise ValueError(f"generate.schedule=explicit needs a count for each of the {t} iterations, "
                         f"got generate.schedule_values={list(values)}")
    return [int(v) for v in values[:t]]




def remaining_trainings(budget: BudgetConfig, done: int) -> int | None:
    """Policy trainings left under budget.max_policy_trainings after `done` (None = no cap)."""
    cap = budget.max_policy_trainings
    return None if cap is None else max(0, cap - done)
