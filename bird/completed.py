"""How a search ends (`end_state`, the one rule), and what a re-run skips: a sweep re-run skips cells whose run
directory already holds a completed result of the same config; a directory that is run again (unfinished, ended in
any other state, or `run.skip_completed=false`) loses the previous search's records first, unless it holds a
checkpoint to resume from (bird/checkpoint.py; the loop decides, holding the run lock)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bird.files import read_json

if TYPE_CHECKING:  # bird.status reads END_STATES without loading the config machinery
    from bird.config.schema import BirdConfig

__all__ = ["completed_result", "clear_previous_run", "end_state", "END_STATES", "DONE", "SearchNotDone", "RUN_ENTRIES"]

# The states a search ends in (status.json "state", result.json "status"; docs/rundir.md). Only DONE is skipped by a
# re-run; bird.status counts each state. A new end state is a line here and a check in end_state.
DONE = "completed"
END_STATES = {
    DONE: "a reward was returned and its policy trained and scored (returned_score is a number)",
    "failed": "the search raised, or ended without a scored returned reward: trainings ran in the loop and none "
              "trained, nothing could be returned, or the returned reward has no score; status_reason says which",
    "incomplete": "it ran to its end, but LLM calls failed after every retry (llm_failed_calls, llm_last_error): a "
                  "re-run asks them again and takes the answers that came back from the response cache",
    "budget_exhausted": "it ran to its end, but the sweep's caps (budget.sweep_max_llm_calls, sweep_max_cost_usd) "
                        "refused some of its calls (llm_refused_calls): a re-run with a higher cap goes on",
}


class SearchNotDone(RuntimeError):
    """A search of a sweep ended in a state other than DONE (its message says which and why): Hydra records the cell
    as failed and the sweep exits non-zero after its other cells."""


def end_state(result: Mapping[str, Any]) -> tuple[str, str | None]:
    """(state, reason) for a search that ran to its end, from its result.json content: DONE with no reason, or
    another END_STATES state with the reason. Reads `policy_trainings`, `n_trained`, `failures`, `returned`,
    `no_return_reason`, `returned_score`, `no_score_reason`, `llm_failed_calls`, `llm_last_error`,
    `llm_refused_calls`, `stop_reason` and `stops_before_rl` (offline reward learning: a returned reward without a
    score is the product); failure kinds are counted, never singled out. Lost or refused LLM calls
    come first: the provider or the sweep's cap, not the method, decided what the search could do, and a re-run
    goes on from there."""
    if result.get("llm_failed_calls"):
        return "incomplete", (f"{result['llm_failed_calls']} LLM call(s) failed after every retry; the last: "
                              f"{str(result.get('llm_last_error') or '?')[:300]}")
    if result.get("llm_refused_calls"):
        return "budget_exhausted", (f"the sweep's caps refused {result['llm_refused_calls']} LLM call(s): "
                                    f"{result.get('stop_reason') or 'generation stopped'}")
    if result.get("policy_trainings") and not result.get("n_trained"):
        kinds = ", ".join(f"{kind} × {n}" for kind, n in (result.get("failures") or {}).items())
        return "failed", (f"no candidate trained: every one of the loop's {result['policy_trainings']} trainings "
                          f"failed (candidate failures: {kinds or 'none recorded'})")
    if result.get("returned") is None:
        return "failed", result.get("no_return_reason") or "no candidate could be returned"
    if result.get("returned_score") is None and not result.get("stops_before_rl"):
        cid = result["returned"].get("candidate_id")
        return "failed", f"the returned reward {cid} has no score: {result.get('no_score_reason') or 'not trained'}"
    return DONE, None

# what a search writes into its run directory (docs/rundir.md); Hydra's .hydra/ and job log are not ours
# (run.lock is not: the process clearing the directory holds it)
RUN_ENTRIES = ("status.json", "config.yaml", "task.json", "events.jsonl", "llm_calls.jsonl", "candidates", "demos.json",
               "decomposition.json", "population.jsonl", "screens.jsonl", "expand", "final", "result.json",
               "search_state.json", "checkpoint.pkl", "lost_llm_calls.jsonl", "environment.json", "islands.jsonl",
               "critics.json", "subtasks.jsonl", "tracker.json", "tensorboard", "wandb", "mlruns", "llm_batches.jsonl")


def completed_result(run_dir: Path, cfg: BirdConfig) -> dict[str, Any] | None:
    """The finished result in `run_dir` for this config, None if there is none.

    Raises ConfigError when the directory holds a completed run of a different config.
    """
    from bird.config.load import ConfigError, config_hash

    try:
        status = read_json(run_dir / "status.json", "status", run_dir)
        result = read_json(run_dir / "result.json", "result", run_dir)
    except (OSError, ValueError):
        return None  # nothing finished here (or a half-written run, or a file bird does not read): run it again
    if not isinstance(status, dict) or not isinstance(result, dict):
        return None
    if status.get("state") != DONE or result.get("status") != DONE:
        return None
    if result.get("config_hash") != config_hash(cfg):
        raise ConfigError(
            f"{run_dir} already holds a completed run of another config (hash {result.get('config_hash')} != "
            f"{config_hash(cfg)}); choose another hydra.run.dir or set run.skip_completed=false to overwrite it"
        )
    return result


def clear_previous_run(run_dir: Path) -> list[str]:
    """Remove a previous search's records from `run_dir` so the next search's append-only files start empty.

    Only the entries a search writes (RUN_ENTRIES) are removed; returns their names.
    """
    removed = []
    for name in RUN_ENTRIES:
        path = run_dir / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        else:
            continue
        removed.append(name)
    return removed
