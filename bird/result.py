"""result.json: what a finished search reports (docs/rundir.md)."""

from __future__ import annotations

from typing import Any

import numpy as np

from bird.completed import end_state
from bird.components.fitness import aggregate_score, resolve_fitness
from bird.config.load import config_hash
from bird.config.schema import BirdConfig
from bird.fidelity import config_substitutes
from bird.learners.job import final_learner, learner_trains, untrained_checkpoint
from bird.llm.base import Generator
from bird.plugins import describe as describe_plugins
from bird.rundir import SCHEMA_VERSION
from bird.state import SearchState

__all__ = ["build_result", "budget_caveats", "substitutes", "why_nothing_returned"]


# what a search that trains the task's reference reward (method=oracle) records as its generator
_NO_GENERATOR = {"provider": "none", "model": None, "label": "the task's reference reward: no generator was asked"}


def substitutes(cfg: BirdConfig, state: SearchState) -> list[str]:
    """The config's substitutes (its own, its components', its differences from BIRD's matched protocol:
    bird.fidelity.config_substitutes) and run-time ones."""
    judge = state.judge.describe() if state.judge is not None else {}
    model = f"{judge['model']} ({judge['label']})" if judge.get("label") else judge.get("model", "no judge")
    out = [s.replace("{judge_model}", model) for s in config_substitutes(cfg)]  # the judge the run actually used
    task = [str(s) for s in state.spec.extra.get("substitutes", [])]  # the task's own (BabyAI's policy, new levels)
    return list(dict.fromkeys(out + task + state.substitutes))


def budget_caveats(cfg: BirdConfig) -> list[str]:
    """What the budget does to the meaning of the results, said at the start of the run and kept in result.json."""
    return [c for c in (untrained_checkpoint(cfg),) if c]


def why_nothing_returned(state: SearchState) -> str | None:
    """Why the search has no returned candidate (None when it has one): each candidate's failure and attempts."""
    if state.returned is not None:
        return None
    failed = [f"{c.id}: {c.failure.kind} after {c.attempts} attempt(s): {c.failure.reason}"
              for c in state.candidates.values() if c.failure is not None]
    reason = "; ".join(failed[:10]) or "no candidate was generated"
    return f"no candidate could be returned ({reason})" + (f"; {state.stop_reason}" if state.stop_reason else "")


def build_result(cfg: BirdConfig, state: SearchState, generator: Generator, scores: list[float], wall: float,
                 resumes: list[dict[str, Any]], no_score_reason: str | None = None) -> dict[str, Any]:
    """result.json's content for a search that ran to its end (videos are added by the caller); its status and
    status_reason are bird.completed.end_state's. `no_score_reason`: why `scores` is empty."""
    totals = generator.totals()
    cand = state.candidates.get(state.returned or "")
    cands = list(state.candidates.values())
    result = {
        "schema_version": SCHEMA_VERSION, "status": None, "status_reason": None,  # set below, from the rest
        "method": cfg.method, "env": cfg.env.id, "suite": state.spec.suite, "task": state.spec.task,
        "seed": cfg.seed, "budget": cfg.budget.name, "config_hash": config_hash(cfg), "choices": cfg.choices,
        "plugins": describe_plugins(cfg.plugins),
        "generator": generator.describe() if cfg.train.reward_source == "candidate" else _NO_GENERATOR,
        "judge": None if state.judge is None else state.judge.describe(),
        "reward_source": cfg.train.reward_source, "substitutes": substitutes(cfg, state),
        "plan": state.plan.__dict__, "score_definition": state.spec.score_definition,
        "fitness_source": resolve_fitness(cfg.feedback.fitness, state.spec.suite),
        "returned": None if cand is None else {
            "candidate_id": cand.id, "code_path": f"candidates/{cand.id}/reward.py" if cand.code else None,
            "in_loop_score": aggregate_score(cfg.feedback.aggregate, state.results.get(cand.id))},
        "returned_score": float(np.mean(scores)) if scores else None,
        # offline reward learning (GRACE with train.learner=none): no policy is trained, the reward is the product
        "stops_before_rl": cfg.final.retrain and not learner_trains(final_learner(cfg)),
        "no_return_reason": why_nothing_returned(state),
        "no_score_reason": None if scores or cand is None else no_score_reason,
        "returned_score_per_seed": scores,
        "iterations": state.iterations_log,
        "tied_iterations": [it["iteration"] for it in state.iterations_log if it.get("all_tied")],
        "caveats": budget_caveats(cfg),
        "n_candidates": len(cands), "n_failed": sum(not c.alive for c in cands),
        "failures": {k: sum(1 for c in cands if c.failure and c.failure.kind == k)
                     for k in sorted({str(c.failure.kind) for c in cands if c.failure})},
        "stop_reason": state.stop_reason, "policy_trainings": state.policy_trainings,
        "n_trained": sum(r.ok for r in state.results.values()),
        "llm_calls": totals["calls"], "llm_cached_calls": totals["cached_calls"],
        "llm_refused_calls": totals.get("refused_calls", 0),
        "llm_failed_calls": totals["failed_calls"], "llm_last_error": totals.get("last_error"),
        "tokens": {"input": totals["input_tokens"], "output": totals["output_tokens"],
                   "cached_input": totals.get("cached_input_tokens", 0), "cache_write": totals.get("cache_write_tokens", 0)},
        "cost_usd": totals["cost_usd"], "env_steps": state.env_steps, "wall_s": round(wall, 2),
        "resumes": resumes,
        **_reward_accuracy(state),
    }
    result["status"], result["status_reason"] = end_state(result)
    return result


def _reward_accuracy(state: SearchState) -> dict[str, Any]:
    """GRACE's reward accuracy on the held-out trajectories (and the train split): the returned reward's, and one
    row per generation (bird/components/demos.py generation_accuracy); {} when the search does not measure it."""
    rows = [{"generation": it["iteration"], **it["reward_accuracy"]} for it in state.iterations_log
            if it.get("reward_accuracy")]
    if not rows:
        return {}
    last = rows[-1]
    return {"reward_accuracy": {"metric": last["metric"], "returned": last["returned"], "train": last["train"],
                                "test": last["test"], "per_generation": rows}}
