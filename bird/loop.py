"""The search: generate → verify → train → feedback → select, repeated; then retrain the returned reward.

Read top-down: `search` → `_search` (set-up, iterations, final retrain, result) → `_iteration` → `_wave`. The stages
(bird/stages/) do the work; the run directory (bird/rundir.py) writes the records.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from bird import checkpoint, registry
from bird.completed import clear_previous_run
from bird.components.crossover import crossover_share
from bird.components.decompose import decompose
from bird.components.demos import expand_negatives, load_demo_set
from bird.components.fitness import aggregate_score
from bird.components.subtasks import co_evolve_subtasks
from bird.components.tree import rescale_counts
from bird.config.needs import needs_judge
from bird.config.schema import BirdConfig
from bird.environment import determinism, record_environment
from bird.envs.registry import make_adapter
from bird.executors import Executor, make_executor
from bird.executors.local import default_workers
from bird.files import write_text
from bird.learners.job import make_job, video_spec
from bird.learners.video import summarise_clips
from bird.llm.base import Generator
from bird.llm.factory import make_generator, make_judge
from bird.llm.sweep import SweepLimits
from bird.progress import ProgressDisplay, print_summary
from bird.result import budget_caveats, build_result
from bird.reward.checks import random_transitions
from bird.reward.factory import preflight
from bird.reward.isolation import harden_host
from bird.rundir import RunDir, write_json
from bird.runlock import RunLock
from bird.stages.feedback import feedback
from bird.stages.generate import generate
from bird.stages.select import select
from bird.stages.train import train
from bird.stages.transfer import transfer
from bird.stages.verify import verify
from bird.state import Plan, SearchState
from bird.tracking import open_tracker
from bird.types import Candidate, Report, TrainResult

__all__ = ["search", "make_plan"]


def search(cfg: BirdConfig, run_dir: Path, sweep: SweepLimits | None = None) -> dict[str, Any]:
    """Run one search and write its run directory, continuing from its checkpoint after a crash; returns the
    result.json content. `sweep`: the LLM limits it shares with the other cells of its sweep (bird.llm.sweep).
    Raises RunLockedError when another process owns the directory."""
    harden_host()  # the parent holds the API keys: same-user processes may not read its environ or memory
    run = RunDir(run_dir)
    with RunLock(run.root) as lock:
        saved = _resumable_or_cleared(cfg, run.root)
        return _search(cfg, run, lock, saved, sweep)


def _search(cfg: BirdConfig, run: RunDir, lock: RunLock, saved: checkpoint.SavedSearch | None,
            sweep: SweepLimits | None = None) -> dict[str, Any]:
    start = time.monotonic()
    run.status("running", method=cfg.method, env=cfg.env.id, seed=cfg.seed, budget=cfg.budget.name)
    ui = ProgressDisplay(cfg.run.progress)
    if lock.takeover:
        print(f"bird: {run.root}: {lock.takeover}", file=sys.stderr)
        run.event("lock_taken_over", detail=lock.takeover)
    tracker = None
    try:
        write_text(run.root / "config.yaml", OmegaConf.to_yaml(OmegaConf.structured(cfg)))
        host = record_environment(run.root, cfg.plugins)
        preflight(cfg.reward.language or "numpy")  # a sandbox that cannot start here is refused before any work
        adapter = make_adapter(cfg.env)
        write_json(run.root / "task.json", adapter.spec.to_json())
        generator = make_generator(cfg.llm, cfg.budget, run.root / "llm_calls.jsonl", sweep)
        tracker = open_tracker(cfg, run, generator)
        plan = make_plan(cfg)
        pool = make_executor(cfg, plan.workers, ui.train_progress)
        try:
            state, spent, resumes = _start(cfg, plan, run, adapter, generator, saved, pool)
            start -= spent
            ui.log(f"bird: {cfg.method} on {cfg.env.id}, seed {cfg.seed}, budget {cfg.budget.name} "
                   f"({plan.n_candidates} × {plan.iterations}, {plan.env_steps:,} steps each) → {run.root}")
            for caveat in budget_caveats(cfg):  # said whatever run.progress is: it changes what the results mean
                print(f"bird: note: {caveat}", file=sys.stderr)
                run.event("budget_caveat", detail=caveat)
            scores, no_score = _run_iterations(cfg, state, generator, pool, run, ui, start, resumes)
        finally:
            pool.close()
        transferred = transfer(cfg, state, generator, run)  # the returned policy on unseen tasks (transfer.tasks)
        result = build_result(cfg, state, generator, scores, time.monotonic() - start, resumes, no_score)
        if transferred is not None:
            result["transfer"] = transferred
        result["videos"] = summarise_clips(run.root, cfg.video.record)
        sampled = generator.cacheable or bool(state.judge is not None and state.judge.cacheable)
        result["determinism"] = determinism(cfg, host, sampled)
        write_json(run.root / "result.json", result)
        tracker.finish(result)
        run.event("search_done", returned=state.returned, returned_score=result["returned_score"],
                  status=result["status"], reason=result["status_reason"])
        run.status(result["status"], error=result["status_reason"], iteration=state.iteration,
                   env_steps=state.env_steps, llm_calls=result["llm_calls"], returned_score=result["returned_score"])
        checkpoint.remove(run.root)
    except BaseException as exc:
        run.status("failed", error=f"{type(exc).__name__}: {exc}")
        if tracker is not None:
            tracker.finish(None)
        raise
    print_summary(result, run.candidate_rows(list(state.candidates)) if cfg.run.progress else None)
    return result


def _run_iterations(cfg: BirdConfig, state: SearchState, generator: Generator, pool: Executor, run: RunDir,
                    ui: ProgressDisplay, start: float, resumes: list[dict[str, Any]]) -> tuple[list[float], str | None]:
    """The remaining iterations, each checkpointed before it is announced (iteration_done), then the final
    retrain. Returns the final scores and, when there are none, why."""
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


def _iteration(cfg: BirdConfig, state: SearchState, generator: Generator, pool: Executor, run: RunDir,
               ui: ProgressDisplay) -> None:
    """One iteration: a wave (two when crossover children are owed), select, the between-iteration passes."""
    cands, results, reports = _wave(cfg, state, generator, pool, run, ui, 0)
    if state.pending_crossovers:
        more, more_results, more_reports = _wave(cfg, state, generator, pool, run, ui, 1)
        cands, results, reports = cands + more, {**results, **more_results}, {**reports, **more_reports}
    select(cfg, state, cands, reports)
    if cfg.decompose.co_evolve:
        revision = co_evolve_subtasks(cfg, state, generator, run.root)
        if revision is not None:
            run.event("subtasks_revised", iteration=state.iteration, kept_previous=revision["kept_previous"])
    scores = {c.id: aggregate_score(cfg.feedback.aggregate, results.get(c.id)) for c in cands}
    run.write_iteration(state, cands, results, reports, scores)
    if cfg.demos.rl_every and state.iteration % cfg.demos.rl_every == 0 and state.iteration < state.plan.iterations:
        expand_negatives(cfg, state, pool, run)
    best = state.iteration_best if state.iteration_best in reports else None
    fits = [reports[c.id].fitness for c in cands if c.id in reports and reports[c.id].fitness is not None]
    tied = len(fits) > 1 and len(set(fits)) == 1  # every ranked candidate equal: the tie rule picked
    if tied:
        ui.log(f"iteration {state.iteration}: all {len(fits)} ranked candidates tie on fitness {fits[0]:.4g}; "
               f"select.rule={cfg.select.rule} picked {best} by its tie rule (docs/selection.md)")
    state.iterations_log.append({
        "iteration": state.iteration, "best_candidate": best, "best_fitness": state.fitness(best),
        "best_score": scores.get(best) if best else None,
        "returned_so_far": state.returned, "n_candidates": len(cands), "n_failed": sum(not c.alive for c in cands),
        "env_steps_cum": state.env_steps, "all_tied": tied})


def _wave(cfg: BirdConfig, state: SearchState, generator: Generator, pool: Executor, run: RunDir,
          ui: ProgressDisplay, wave: int) -> tuple[list[Candidate], dict[str, TrainResult], dict[str, Report]]:
    """Generate, verify, train and give feedback to one wave of candidates (wave 1: crossover children owed)."""
    last_unjudged = state.iteration == state.plan.iterations and not cfg.loop.feedback_on_last
    screened_cfg = replace(cfg, verify=replace(cfg.verify, screens=[])) if last_unjudged else cfg
    cands = generate(screened_cfg, state, generator, wave)
    if not cands:
        return [], {}, {}
    state.candidates.update((c.id, c) for c in cands)
    run.write_wave(state, cands, verify(screened_cfg, state, cands))
    ui.log(f"[bold]iteration {state.iteration}/{state.plan.iterations}[/]: {len(cands)} generated, "
           f"{sum(c.alive for c in cands)} passed verify")
    results = {} if last_unjudged else train(cfg, state, cands, pool, run.candidate_dir)
    state.results.update(results)
    reports = {} if last_unjudged else feedback(cfg, state, cands, results)
    state.reports.update(reports)
    return cands, results, reports


def _final_retrain(cfg: BirdConfig, state: SearchState, pool: Executor, run: RunDir) -> tuple[list[float], str | None]:
    """The returned reward retrained on fresh seeds (final.retrain), or its in-loop score; ([], why) when there is
    no score (([], None) when nothing was returned)."""
    cand = state.candidates[state.returned] if state.returned else None
    if cand is None:
        return [], None
    if not cfg.final.retrain:
        own = state.results.get(cand.id)
        score = aggregate_score(cfg.feedback.aggregate, own)
        why = "final.retrain=false and " + (f"its training failed ({own.failure.kind}: {own.failure.reason})"
                                            if own is not None and own.failure else "it was not trained in the loop")
        return ([], why) if score is None else ([score], None)
    code = None if cfg.train.reward_source == "reference" else cand.code
    seeds = [cfg.final.seed_offset + state.seed * 100 + k for k in range(state.plan.final_seeds)]
    video = video_spec(cfg, "final", candidate_id=cand.id)
    keep = cfg.run.save_policies or bool(cfg.transfer.tasks.get(cfg.env.id))  # transfer evaluates the saved policies
    jobs = [replace(make_job(cfg, f"final-s{s}", code, s, state.plan.final_env_steps, run.root / "final" / f"seed{s}",
                             video=video), save_policy=keep) for s in seeds]
    results = pool.run(cfg.final.learner or cfg.train.learner, jobs)
    state.env_steps += sum(r.env_steps for r in results)
    scores = run.write_final(cand.id, seeds, results)
    failed = "; ".join(f"seed {s}: {r.failure.kind}: {r.failure.reason}" for s, r in zip(seeds, results, strict=True)
                       if r.failure)
    return scores, None if scores else f"every final-retrain seed failed ({failed or 'no checkpoint scored'})"


# -- set-up -----------------------------------------------------------------------------------------------------
def make_plan(cfg: BirdConfig) -> Plan:
    """Derived values: the method's schedule of K per iteration and its T under the budget's caps, steps, workers."""
    b = cfg.budget
    full = registry.get("schedule", cfg.generate.schedule)(cfg.generate.n_candidates, cfg.loop.iterations,
                                                            list(cfg.generate.schedule_values))
    schedule = tuple(min(k, b.max_candidates or k) for k in full[: b.max_iterations or len(full)])
    k = max(schedule)
    seeds = min(cfg.final.seeds or b.final_seeds, b.final_seeds)
    own = {"n_candidates": cfg.generate.n_candidates, "iterations": cfg.loop.iterations,
           "population_size": cfg.select.population_size or cfg.generate.n_candidates,
           "final_seeds": cfg.final.seeds or b.final_seeds}
    planned = {"n_candidates": k, "iterations": len(schedule), "population_size": cfg.select.population_size or k,
               "final_seeds": seeds}
    if len(set(full)) > 1:  # a varying schedule is not told by K and T alone
        own["schedule"], planned["schedule"] = list(full), list(schedule)
    per_core = max(1, int(default_workers() // cfg.train.resources.num_cpus))
    return Plan(n_candidates=k, iterations=len(schedule), env_steps=b.env_steps,
                final_env_steps=b.final_env_steps or b.env_steps, final_seeds=seeds,
                workers=cfg.train.workers or min(per_core, k), population_size=planned["population_size"],
                n_crossover=crossover_share(cfg.crossover, cfg.generate.n_candidates, k),
                actions=rescale_counts(cfg.tree.actions, k),
                capped={key: [own[key], planned[key]] for key in own if own[key] != planned[key]}, schedule=schedule)


def _resumable_or_cleared(cfg: BirdConfig, root: Path) -> checkpoint.SavedSearch | None:
    """The checkpoint to continue from (run.resume and one exists); otherwise the previous search's records
    are removed so this search starts in an empty directory. Called holding the run lock."""
    saved = checkpoint.load(root, cfg) if cfg.run.resume else None
    if saved is None and (removed := clear_previous_run(root)):
        print(f"bird: {root} held a previous run's records ({', '.join(removed)}); they are replaced by this run",
              file=sys.stderr)
    return saved


def _start(cfg: BirdConfig, plan: Plan, run: RunDir, adapter: Any, generator: Generator,
           saved: checkpoint.SavedSearch | None, pool: Executor) -> tuple[SearchState, float, list[dict[str, Any]]]:
    """A fresh state after set-up (checkpointed as iteration 0), or the checkpointed one with the run directory
    rewound to it. Returns (state, wall seconds already spent, resume records)."""
    if saved is None:
        state = SearchState(adapter.spec, plan, cfg.seed, random_transitions(adapter, cfg.verify.smoke_steps, cfg.seed))
        _setup(cfg, state, generator, run, pool)
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


def _setup(cfg: BirdConfig, state: SearchState, generator: Generator, run: RunDir, pool: Executor | None = None) -> None:
    """Inputs some methods need before the first generation: demos (a PPO expert trained by `pool` where the task has
    no scripted one), the task decomposition, a judge."""
    if cfg.demos.enabled:
        state.demos = load_demo_set(cfg, state.spec, generator, pool)
        write_json(run.root / "demos.json", state.demos.describe())
        if state.demos.meta["expert"] != "the task's scripted expert":
            state.substitutes.append(f"expert demonstrations from {state.demos.meta['expert']}")
    state.decomposition = decompose(cfg, state, generator)
    if state.decomposition is not None:
        write_json(run.root / "decomposition.json", state.decomposition)
        run.event("decomposed", kind=state.decomposition["kind"], valid=state.decomposition["valid"])
    _attach_judge(cfg, state, generator)


def _attach_judge(cfg: BirdConfig, state: SearchState, generator: Generator) -> None:
    """The judge generator, when a feedback format, thought alignment or self-verification asks for one (rebuilt,
    not checkpointed)."""
    if needs_judge(cfg):
        state.judge = make_judge(cfg.llm, cfg.judge, generator)
