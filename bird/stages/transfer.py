"""Transfer: the returned policy of each final seed, unchanged, evaluated on unseen tasks (transfer.tasks; PRM4RL App.
B.1, the generalisation protocol `+protocol=prm4rl_generalisation`).

A policy that sees a subtask prior (train.obs_augment) needs the unseen task's plan and Ψ: one more generation per
unseen task, the method's own prompt on that task (the paper leaves how it made them unstated [AMB]); its prompt, answer
and checks are kept in `transfer/<suite>__<task>/` as a run directory keeps a candidate's. Records:
`transfer/transfer.json`, and `transfer` in result.json.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from bird.config.schema import BirdConfig
from bird.envs.demos import env_config
from bird.envs.registry import make_adapter
from bird.files import read_json
from bird.learners.job import make_job
from bird.llm.base import Generator
from bird.registry import get
from bird.reward.checks import random_transitions
from bird.rundir import RunDir, write_json
from bird.stages.generate import generate
from bird.stages.verify import verify
from bird.state import SearchState
from bird.types import Candidate

__all__ = ["transfer", "PRIOR_SUBSTITUTE"]

PRIOR_SUBSTITUTE = ("transfer: each unseen task's plan_list and Ψ come from one more generation with the method's own "
                    "prompt on that task (PRM4RL App. B.1 leaves how they were made unstated [AMB])")


def transfer(cfg: BirdConfig, state: SearchState, generator: Generator, run: RunDir) -> dict[str, Any] | None:
    """Evaluate the final retrain's policies on env.id's unseen tasks (None when transfer.tasks names none)."""
    tests = cfg.transfer.tasks.get(cfg.env.id, [])
    if not tests:
        return None
    final = run.root / "final" / "final.json"
    seeds = read_json(final, "record", run.root)["seeds"] if final.exists() else []
    policies = [(s, p) for s in seeds if (p := run.root / "final" / f"seed{s}" / "policy.npz").is_file()]
    prior = cfg.train.obs_augment != "none"  # the policy sees a subtask prior: the unseen task needs its own Ψ
    out: dict[str, Any] = {"source": cfg.env.id, "episodes": cfg.transfer.episodes, "seeds": [s for s, _ in policies],
                           "prior": "generated per unseen task" if prior else "none", "tasks": {}}
    if prior and policies:
        state.substitutes.append(PRIOR_SUBSTITUTE)
    for env_id in tests:
        if not policies:  # nothing returned or retrained: no generation is spent on the unseen tasks
            out["tasks"][env_id] = {**_empty(), "failure": "no policy to evaluate: the search returned none"}
            continue
        folder = run.root / "transfer" / env_id.replace("/", "__")
        out["tasks"][env_id] = _unseen(cfg, state, generator, policies, env_id, RunDir(folder), prior)
        run.event("transfer_task", env=env_id, scores=out["tasks"][env_id]["scores"],
                  failure=out["tasks"][env_id]["failure"])
    write_json(run.root / "transfer" / "transfer.json", out)
    return out


def _unseen(cfg: BirdConfig, state: SearchState, generator: Generator, policies: list[tuple[int, Path]],
            env_id: str, folder: RunDir, prior: bool) -> dict[str, Any]:
    """One unseen task, at the source run's horizon: its plan and Ψ (when the policy sees a prior), then each seed's
    policy on it."""
    env = replace(env_config(env_id), horizon=cfg.env.horizon)
    tcfg = replace(cfg, env=env)
    adapter = make_adapter(env)
    spec = adapter.spec
    write_json(folder.root / "task.json", spec.to_json())
    record = {**_empty(), "scores": [None] * len(policies)}
    if (spec.obs_index.dim, spec.action_dim) != (state.spec.obs_index.dim, state.spec.action_dim):
        record["failure"] = (f"{env_id}'s observation and action sizes ({spec.obs_index.dim}, {spec.action_dim}) are not "
                             f"the source's ({state.spec.obs_index.dim}, {state.spec.action_dim})")
        return record
    cand = _plan(tcfg, state, generator, adapter, folder) if prior else None
    record["candidate_id"] = cand.id if cand else None
    if prior and (cand is None or not cand.alive):
        record["failure"] = "no program for the unseen task: " + (cand.failure.reason if cand and cand.failure else "none")
        return record
    scores = [_evaluate(tcfg, adapter, path, seed, cand, record) for seed, path in policies]
    record["scores"] = scores
    done = [s for s in scores if s is not None]
    record["mean"] = float(np.mean(done)) if done else None
    return record


def _empty() -> dict[str, Any]:
    return {"scores": [], "mean": None, "candidate_id": None, "plan_list": None, "failure": None}


def _plan(cfg: BirdConfig, source: SearchState, generator: Generator, adapter: Any, folder: RunDir) -> Candidate | None:
    """One generation on the unseen task with the method's prompt (one candidate), verified and screened as in the
    search; its records in `folder`."""
    plan = replace(source.plan, n_candidates=1, schedule=(1,), actions=(), n_crossover=0)
    state = SearchState(adapter.spec, plan, source.seed, random_transitions(adapter, cfg.verify.smoke_steps, source.seed))
    state.iteration = 1
    cands = generate(cfg, state, generator)
    folder.write_wave(state, cands, verify(cfg, state, cands))
    return next((c for c in cands if c.alive), cands[0] if cands else None)


def _evaluate(cfg: BirdConfig, adapter: Any, path: Path, seed: int, cand: Candidate | None,
              record: dict[str, Any]) -> float | None:
    """The saved policy's mean benchmark score over transfer.episodes episodes of the unseen task (the evaluation
    seeds of `seed`), the prior from the unseen task's Ψ; None, with the failure recorded, when it cannot run."""
    from bird.learners.augment import SubtaskPrior
    from bird.learners.evaluate import Evaluator
    from bird.learners.sb3_policy import load_policy, saved_obs_dim
    from bird.reward.factory import open_program
    from bird.reward.sandbox import RewardProgramError

    act = load_policy(path, deterministic=True)
    width = saved_obs_dim(path) - adapter.spec.obs_index.dim
    evaluator = Evaluator(adapter, cfg.transfer.episodes, seed, cfg.train.eval_end_on_success)
    try:
        if cand is None:
            return float(evaluator(act)["score"])
        job = make_job(cfg, cand.id, cand.code, seed, 0, path.parent)
        with open_program(cand.code or "", adapter.spec, job, job) as program:
            record["plan_list"] = list(program.plan_list)
            table = get("obs_augment", cfg.train.obs_augment)(program.plan_list, width)
            prior = SubtaskPrior(program, table)
            return float(evaluator(lambda obs: act(prior(obs)))["score"])
    except (RewardProgramError, ValueError) as exc:
        record["failure"] = f"seed {seed}: {type(exc).__name__}: {exc}"[:500]
        return None
    finally:
        evaluator.close()
