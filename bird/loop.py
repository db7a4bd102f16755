"""The search: generate → verify → train → feedback → select, repeated; then retrain the returned reward."""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from bird import checkpoint
from bird.config.load import config_hash
from bird.config.schema import BirdConfig
from bird.environment import determinism, record_environment
from bird.envs.registry import make_adapter
from bird.executors import Executor, make_executor
from bird.learners.video import summarise_clips, video_spec
from bird.llm.factory import make_generator
from bird.pool import default_workers
from bird.progress import ProgressDisplay, print_summary
from bird.rundir import SCHEMA_VERSION, RunDir, write_json
from bird.runlock import RunLock
from bird.stages.feedback import feedback, resolve_fitness
from bird.stages.generate import generate
from bird.stages.select import select
from bird.stages.train import make_job, train
from bird.stages.verify import random_transitions, verify
from bird.state import Plan, SearchState
from bird.tracking import open_tracker
from bird.types import Candidate, Report, TrainResult

__all__ = ["search", "make_plan"]


def make_plan(cfg: BirdConfig) -> Plan:
    """Derived values: the method's schedule of K per iteration and its T under the budget's caps, steps, workers."""
    from bird.components.crossover import crossover_share
    from bird.components.tree import rescale_counts
    from bird.registry import get

    b = cfg.budget
    full = get("schedule", cfg.generate.schedule)(cfg.generate.n_candidates, cfg.loop.iterations,
                                                   list(cfg.generate.schedule_values))
    schedule = tuple(min(k, b.max_candidates or k) for k in full[: b.max_iterations or len(full)])
    k = max(schedule)
    own = {"n_candidates": cfg.generate.n_candidates, "iterations": cfg.loop.iterations,
           "population_size": cfg.select.population_size or cfg.generate.n_candidates}
    planned = {"n_candidates": k, "iterations": len(schedule), "population_size": cfg.select.population_size or k}
    if len(set(full)) > 1:  # a varying schedule is not told by K and T alone
        own["schedule"], planned["schedule"] = list(full), list(schedule)
    per_core = max(1, int(default_workers() // cfg.train.resources.num_cpus))
    return Plan(n_candidates=k, iterations=len(schedule), env_steps=b.env_steps,
                final_env_steps=b.final_env_steps or b.env_steps, final_seeds=b.final_seeds,
                workers=cfg.train.workers or min(per_core, k), population_size=planned["population_size"],
                n_crossover=crossover_share(cfg, k), actions=rescale_counts(cfg.tree.actions, k),
                capped={key: [own[key], planned[key]] for key in own if own[key] != planned[key]}, schedule=schedule)


def _wave(cfg: BirdConfig, state: SearchState, generator: Any, pool: Executor, run: RunDir, ui: ProgressDisplay,
          wave: int) -> tuple[list[Candidate], dict[str, TrainResult], dict[str, Report]]:
    """Generate, verify, train and give feedback to one wave of candidates (wave 1: crossover children owed)."""
    last_unjudged = state.iteration == state.plan.iterations and not cfg.loop.feedback_on_last
    screened_cfg = replace(cfg, verify=replace(cfg.verify, screens=[])) if last_unjudged else cfg
    cands = generate(screened_cfg, state, generator, wave)
    if not cands:
        return [], {}, {}
    for c in cands:
        state.candidates[c.id] = c
        run.write_generated(c)
        run.event("candidate_generated", id=c.id, failure=c.failure.to_json() if c.failure else None)
    for cid, vr in verify(screened_cfg, state, cands).items():
        run.write_verified(cid, vr)
        run.event("candidate_verified", id=cid, ok=vr.ok, failure=vr.failure.to_json() if vr.failure else None)
        for name, verdict in state.screens.get(cid, {}).items():
            run.write_screen(cid, name, verdict, trained=vr.ok)
    n_live = sum(c.alive for c in cands)
    ui.log(f"[bold]iteration {state.iteration}/{state.plan.iterations}[/]: {len(cands)} generated, {n_live} passed verify")
    results = {} if last_unjudged else train(cfg, state, cands, pool, run.candidate_dir)
    state.results.update(results)
    reports = {} if last_unjudged else feedback(cfg, state, cands, results)
    state.reports.update(reports)
    return cands, results, reports


def _iteration(cfg: BirdConfig, state: SearchState, generator: Any, pool: Executor, run: RunDir,
               ui: ProgressDisplay) -> None:
    cands, results, reports = _wave(cfg, state, generator, pool, run, ui, 0)
    if state.pending_crossovers:
        more, more_results, more_reports = _wave(cfg, state, generator, pool, run, ui, 1)
        cands, results, reports = cands + more, {**results, **more_results}, {**reports, **more_reports}
    select(cfg, state, cands, reports)
    if cfg.decompose.co_evolve:
        from bird.components.subtasks import co_evolve_subtasks

        revision = co_evolve_subtasks(cfg, state, generator, run.root)
        if revision is not None:
            run.event("subtasks_revised", iteration=state.iteration, kept_previous=revision["kept_previous"])
    if state.demos is not None:
        run.write_demo_scores(state, cands)
    if state.population:
        run.write_population(state)
    run.write_search_structures(state)
    if cfg.demos.rl_every and state.iteration % cfg.demos.rl_every == 0 and state.iteration < state.plan.iterations:
        from bird.components.demos import expand_negatives

        expand_negatives(cfg, state, pool, run)
    for c in cands:
        res = results.get(c.id)
        score = cfg_score(cfg, res)
        run.write_candidate(c, res, reports.get(c.id), score)
        if c.id in reports and "judge" in reports[c.id].stats:
            write_json(run.candidate_dir(c.id) / "judge.json", reports[c.id].stats)
        for name, data in state.records.pop(c.id, {}).items():  # LLM passes' records (thought.json, ...)
            write_json(run.candidate_dir(c.id) / name, data)
        run.event("candidate_trained", id=c.id, failure=c.failure.to_json() if c.failure else None,
                  fitness=reports[c.id].fitness if c.id in reports else None, score=score)
    best = state.iteration_best if state.iteration_best in reports else None
    state.iterations_log.append({
        "iteration": state.iteration, "best_candidate": best, "best_fitness": state.fitness(best),
        "best_score": cfg_score(cfg, results.get(best)) if best else None,
        "returned_so_far": state.returned, "n_candidates": len(cands), "n_failed": sum(not c.alive for c in cands),
        "env_steps_cum": state.env_steps})


def cfg_score(cfg: BirdConfig, res: Any) -> float | None:
    """A candidate's benchmark score, aggregated over checkpoints as feedback.aggregate says."""
    from bird.registry import get

    if res is None or not res.ok:
        return None
    return get("aggregate", cfg.feedback.aggregate)([c.score for c in res.curve], res.shipped)


def _final_retrain(cfg: BirdConfig, state: SearchState, pool: Executor, run: RunDir) -> list[float]:
    cand = state.candidates[state.returned] if state.returned else None
    if cand is None:
        return []
    if not cfg.final.retrain:
        score = cfg_score(cfg, state.results.get(cand.id))
        return [] if score is None else [score]
    code = None if cfg.train.reward_source == "reference" else cand.code
    seeds = [cfg.final.seed_offset + state.seed * 100 + k for k in range(state.plan.final_seeds)]
    video = video_spec(cfg, "final", candidate_id=cand.id)
    jobs = [make_job(cfg, f"final-s{s}", code, s, state.plan.final_env_steps, run.root / "final" / f"seed{s}",
                     video=video) for s in seeds]
    results = pool.run(cfg.final.learner or cfg.train.learner, jobs)
    state.env_steps += sum(r.env_steps for r in results)
    scores = [r.shipped_checkpoint.score for r in results if r.ok]
    write_json(run.root / "final" / "final.json", {
        "candidate_id": cand.id, "seeds": seeds, "scores": [r.shipped_checkpoint.score if r.ok else None for r in results],
        "checkpoints": [r.checkpoint_choice for r in results],
        "failures": [r.failure.to_json() if r.failure else None for r in results],
        "videos": [[str(Path(v).relative_to(run.root)) for v in r.videos] for r in results]})
    run.event("final_retrain", candidate=cand.id, seeds=seeds, scores=scores)
    return scores


def _substitutes(cfg: BirdConfig, state: SearchState) -> list[str]:
    """The config's substitutes, those of the components it names (attribute `substitute`), and run-time ones."""
    from bird.config.validate import REGISTRY_KEYS, _get
    from bird.registry import get

    judge = state.judge.describe() if state.judge is not None else {}
    model = f"{judge['model']} ({judge['label']})" if judge.get("label") else judge.get("model", "no judge")
    out = [s.replace("{judge_model}", model) for s in cfg.substitutes]  # the judge the run actually used
    for key, family in REGISTRY_KEYS.items():
        label = getattr(get(family, _get(cfg, key)), "substitute", None)
        out += [label] if label else []
    out += state.substitutes
    return list(dict.fromkeys(out))


def _setup(cfg: BirdConfig, state: SearchState, generator: Any, run: RunDir) -> None:
    """Inputs some methods need before the first generation: demos, the task decomposition, a judge."""
    from bird.components.decompose import decompose

    if cfg.demos.enabled:
        from bird.components.demos import load_demo_set

        state.demos = load_demo_set(cfg, state.spec, generator)
        write_json(run.root / "demos.json", state.demos.describe())
    state.decomposition = decompose(cfg, state, generator)
    if state.decomposition is not None:
        write_json(run.root / "decomposition.json", state.decomposition)
        run.event("decomposed", kind=state.decomposition["kind"], valid=state.decomposition["valid"])
    _attach_judge(cfg, state, generator)


def _attach_judge(cfg: BirdConfig, state: SearchState, generator: Any) -> None:
    """The judge generator, when a feedback format, thought alignment or self-verification asks for one (rebuilt,
    not checkpointed)."""
    from bird.components.roles import needs_judge
    from bird.llm.factory import make_judge

    if needs_judge(cfg):
        state.judge = make_judge(cfg.llm, cfg.judge, generator)


def _why_nothing_returned(state: SearchState) -> str | None:
    """Why the search has no returned candidate (None when it has one): each candidate's failure and attempts."""
    if state.returned is not None:
        return None
    failed = [f"{c.id}: {c.failure.kind} after {c.attempts} attempt(s): {c.failure.reason}"
              for c in state.candidates.values() if c.failure is not None]
    reason = "; ".join(failed[:10]) or "no candidate was generated"
    return f"no candidate could be returned ({reason})" + (f"; {state.stop_reason}" if state.stop_reason else "")


def _result(cfg: BirdConfig, state: SearchState, generator: Any, scores: list[float], wall: float,
            resumes: list[dict[str, Any]]) -> dict[str, Any]:
    totals = generator.totals()
    cand = state.candidates.get(state.returned or "")
    cands = list(state.candidates.values())
    return {
        "schema_version": SCHEMA_VERSION, "status": "completed",
        "method": cfg.method, "env": cfg.env.id, "suite": state.spec.suite, "task": state.spec.task,
        "seed": cfg.seed, "budget": cfg.budget.name, "config_hash": config_hash(cfg), "choices": cfg.choices,
        "generator": generator.describe(), "substitutes": _substitutes(cfg, state),
        "plan": state.plan.__dict__, "score_definition": state.spec.score_definition,
        "fitness_source": resolve_fitness(cfg.feedback.fitness, state.spec.suite),
        "returned": None if cand is None else {
            "candidate_id": cand.id, "code_path": f"candidates/{cand.id}/reward.py" if cand.code else None,
            "in_loop_score": cfg_score(cfg, state.results.get(cand.id))},
        "returned_score": float(np.mean(scores)) if scores else None,
        "no_return_reason": _why_nothing_returned(state),
        "returned_score_per_seed": scores,
        "iterations": state.iterations_log,
        "n_candidates": len(cands), "n_failed": sum(not c.alive for c in cands),
        "failures": {k: sum(1 for c in cands if c.failure and c.failure.kind == k)
                     for k in sorted({str(c.failure.kind) for c in cands if c.failure})},
        "stop_reason": state.stop_reason, "policy_trainings": state.policy_trainings,
        "llm_calls": totals["calls"], "llm_cached_calls": totals["cached_calls"],
        "tokens": {"input": totals["input_tokens"], "output": totals["output_tokens"]},
        "cost_usd": totals["cost_usd"], "env_steps": state.env_steps, "wall_s": round(wall, 2),
        "resumes": resumes,
    }


def _start(cfg: BirdConfig, plan: Plan, run: RunDir, adapter: Any, generator: Any,
           saved: checkpoint.SavedSearch | None) -> tuple[SearchState, float, list[dict[str, Any]]]:
    """A fresh state after set-up (checkpointed as iteration 0), or the checkpointed one with the run directory
    rewound to it. Returns (state, wall seconds already spent, resume records)."""
    if saved is None:
        state = SearchState(adapter.spec, plan, cfg.seed, random_transitions(adapter, cfg.verify.smoke_steps, cfg.seed))
        _setup(cfg, state, generator, run)
        run.event("search_started", method=cfg.method, env=cfg.env.id, seed=cfg.seed, plan=plan.__dict__)
        checkpoint.save(run.root, cfg, state, generator.totals(), 0.0, [])
        return state, 0.0, []
    record = checkpoint.rewind(run.root, saved)
    resumes = [*saved.resumes, record]
    generator.ledger.totals.update(saved.ledger)
    checkpoint.restore_rng(saved)  # after this session's set-up (adapter, executor), so it cannot shift the streams
    # the same checkpoint with this resume recorded, so a search killed again before its next iteration ends keeps it
    checkpoint.save(run.root, cfg, saved.state, generator.totals(), saved.wall_s, resumes)
    _attach_judge(cfg, saved.state, generator)
    run.event("search_resumed", **record)
    print(f"bird: resuming {run.root} after iteration {saved.state.iteration} ({record['lost_llm_calls']} LLM "
          f"calls of the interrupted iteration moved to lost_llm_calls.jsonl)", file=sys.stderr)
    return saved.state, saved.wall_s, resumes


def search(cfg: BirdConfig, run_dir: Path) -> dict[str, Any]:
    """Run one search and write its run directory, continuing from its checkpoint after a crash; returns the
    result.json content. Raises RunLockedError when another process owns the directory."""
    from bird.reward.isolation import harden_host

    harden_host()  # the parent holds the API keys: same-user processes may not read its environ or memory
    run = RunDir(run_dir)
    with RunLock(run.root) as lock:
        saved = _resumable_or_cleared(cfg, run.root)
        return _search(cfg, run, lock, saved)


def _resumable_or_cleared(cfg: BirdConfig, root: Path) -> checkpoint.SavedSearch | None:
    """The checkpoint to continue from (run.resume and one exists); otherwise the previous search's records
    are removed so this search starts in an empty directory. Called holding the run lock."""
    from bird.completed import clear_previous_run

    saved = checkpoint.load(root, cfg) if cfg.run.resume else None
    if saved is None and (removed := clear_previous_run(root)):
        print(f"bird: {root} held a previous run's records ({', '.join(removed)}); they are replaced by this run",
              file=sys.stderr)
    return saved


def _search(cfg: BirdConfig, run: RunDir, lock: RunLock, saved: checkpoint.SavedSearch | None) -> dict[str, Any]:
    start = time.monotonic()
    run.status("running", method=cfg.method, env=cfg.env.id, seed=cfg.seed, budget=cfg.budget.name)
    ui = ProgressDisplay(cfg.run.progress)
    if lock.takeover:
        print(f"bird: {run.root}: {lock.takeover}", file=sys.stderr)
        run.event("lock_taken_over", detail=lock.takeover)
    tracker = None
    try:
        (run.root / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.structured(cfg)))
        host = record_environment(run.root)
        adapter = make_adapter(cfg.env)
        write_json(run.root / "task.json", adapter.spec.to_json())
        generator = make_generator(cfg.llm, cfg.budget, run.root / "llm_calls.jsonl")
        tracker = open_tracker(cfg, run, generator)
        plan = make_plan(cfg)
        pool = make_executor(cfg, plan.workers, ui.train_progress)
        try:
            state, spent, resumes = _start(cfg, plan, run, adapter, generator, saved)
            start -= spent
            ui.log(f"bird: {cfg.method} on {cfg.env.id}, seed {cfg.seed}, budget {cfg.budget.name} "
                   f"({plan.n_candidates} × {plan.iterations}, {plan.env_steps:,} steps each) → {run.root}")
            scores = _run_iterations(cfg, state, generator, pool, run, ui, start, resumes)
        finally:
            pool.close()
        result = _result(cfg, state, generator, scores, time.monotonic() - start, resumes)
        result["videos"] = summarise_clips(run.root, cfg.video.record)
        sampled = generator.cacheable or bool(state.judge is not None and state.judge.cacheable)
        result["determinism"] = determinism(cfg, host, sampled)
        write_json(run.root / "result.json", result)
        tracker.finish(result)
        run.event("search_done", returned=state.returned, returned_score=result["returned_score"])
        run.status("completed", iteration=state.iteration, env_steps=state.env_steps, llm_calls=result["llm_calls"],
                   returned_score=result["returned_score"])
        checkpoint.remove(run.root)
    except BaseException as exc:
        run.status("failed", error=f"{type(exc).__name__}: {exc}")
        if tracker is not None:
            tracker.finish(None)
        raise
    if cfg.run.progress:
        import json

        rows = [json.loads((run.root / "candidates" / cid / "candidate.json").read_text())
                for cid in state.candidates if (run.root / "candidates" / cid / "candidate.json").exists()]
        print_summary(result, rows)
    return result


def _run_iterations(cfg: BirdConfig, state: SearchState, generator: Any, pool: Executor, run: RunDir,
                    ui: ProgressDisplay, start: float, resumes: list[dict[str, Any]]) -> list[float]:
    """The remaining iterations, each checkpointed before it is announced (iteration_done), then the final
    retrain. Returns the final scores."""
    plan = state.plan
    for it in range(state.iteration + 1, plan.iterations + 1):
        if state.stop_reason:  # restored from a checkpoint taken after generation stopped
            break
        state.iteration = it
        ui.iteration = f"[it {it}/{plan.iterations}]"
        run.status("running", iteration=it, iterations=plan.iterations, env_steps=state.env_steps,
                   llm_calls=generator.totals()["calls"])
        _iteration(cfg, state, generator, pool, run, ui)
        checkpoint.save(run.root, cfg, state, generator.totals(), time.monotonic() - start, resumes)
        run.event("iteration_done", **state.iterations_log[-1])
        if state.stop_reason:
            ui.log(f"generation stopped: {state.stop_reason}")
            break
    ui.iteration = "[final]"
    run.status("running", iteration="final", iterations=plan.iterations, env_steps=state.env_steps,
               llm_calls=generator.totals()["calls"])
    return _final_retrain(cfg, state, pool, run)
