"""The search state carried between iterations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bird.envs.base import TaskSpec
from bird.state_codec import register_saved
from bird.types import Candidate, Report, TrainResult

__all__ = ["SearchState", "Plan"]


@register_saved
@dataclass(frozen=True)
class Plan:
    """Values derived once from the config (method × budget), recorded in result.json."""

    n_candidates: int
    iterations: int
    env_steps: int
    final_env_steps: int
    final_seeds: int
    workers: int
    population_size: int = 0  # survivors of select.rule=mu_plus_lambda (select.population_size or K)
    n_crossover: int = 0  # programmatic crossover children per iteration, out of K (crossover.n rescaled to K)
    actions: tuple[str, ...] = ()  # tree action of each sample of an expansion (tree.actions rescaled to K)
    capped: dict[str, list] = field(default_factory=dict)  # what the budget's caps changed: {key: [method's, planned]}
    schedule: tuple[int, ...] = ()  # candidates of each iteration (generate.schedule under the budget caps)

    def candidates_at(self, iteration: int) -> int:
        """K of a 1-based iteration (n_candidates when no schedule was given)."""
        return self.schedule[iteration - 1] if self.schedule else self.n_candidates


@register_saved
@dataclass
class SearchState:
    spec: TaskSpec
    plan: Plan
    seed: int
    smoke_batch: dict[str, np.ndarray]  # random-policy transitions for the smoke check
    iteration: int = 0
    candidates: dict[str, Candidate] = field(default_factory=dict)
    results: dict[str, TrainResult] = field(default_factory=dict)
    reports: dict[str, Report] = field(default_factory=dict)
    iteration_best: str | None = None  # id of the latest iteration's best (by fitness)
    global_best: str | None = None  # id of the best so far (strictly improving)
    returned: str | None = None
    env_steps: int = 0
    stop_reason: str | None = None  # set when generation must stop (LLM budget exhausted)
    iterations_log: list[dict[str, Any]] = field(default_factory=list)
    population: list[str] = field(default_factory=list)  # candidate ids alive in the population store
    demos: Any = None  # bird.components.demos.DemoSet when demos.enabled
    demo_scores: dict[str, Any] = field(default_factory=dict)  # candidate id -> DemoScores
    trajectories: Any = None  # bird.components.trajectories.TrajectoryStore (grows from collected rollouts)
    screens: dict[str, dict[str, Any]] = field(default_factory=dict)  # candidate id -> {screen: verdict}
    decomposition: dict[str, Any] | None = None  # decompose.kind's record (graph, validity, attempts)
    judge: Any = None  # the judge generator, when the feedback format asks for one
    substitutes: list[str] = field(default_factory=list)  # substitutes a component had to use at run time
    policy_trainings: int = 0  # in-loop policy trainings started so far (budget.max_policy_trainings)
    subtasks: list[dict[str, str]] | None = None  # decompose.kind=subtask_list: the current list (co-evolved)
    judgements: dict[str, dict[str, Any]] = field(default_factory=dict)  # candidate id -> judge scores per subtask
    thoughts: dict[str, dict[str, str | None]] = field(default_factory=dict)  # candidate id -> {"stated", "aligned"}
    records: dict[str, dict[str, Any]] = field(default_factory=dict)  # candidate id -> {file name: JSON}, written once
    islands: list[list[str]] = field(default_factory=list)  # member ids per island (select.rule=island_lineage)
    island_admissions: int = 0  # admissions since the last migration
    island_log: list[dict[str, Any]] = field(default_factory=list)  # per iteration: admissions, migrations, members
    pending_crossovers: int = 0  # crossover children owed to a second wave (no archive to draw parents from yet)
    critics: list[dict[str, Any]] = field(default_factory=list)  # critic programs {id, code, ok, failure}
    self_verify: dict[str, float | None] = field(default_factory=dict)  # candidate id -> self-verify rating in [-1, 1]

    def fitness(self, cid: str | None) -> float | None:
        if cid is None or cid not in self.reports:
            return None
        return self.reports[cid].fitness
