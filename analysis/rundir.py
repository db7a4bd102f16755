"""Read run directories (docs/rundir.md, schema_version 1) into tidy pandas tables."""

from __future__ import annotations

import csv
import json
import math
import os
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

__all__ = ["RunCollection", "Skipped", "find_run_dirs", "load_runs", "read_runs"]

SCHEMA_VERSION = 1
RUN_KEYS = ["benchmark", "task", "method", "seed"]
_REQUIRED = {"method": str, "suite": str, "task": str, "seed": int}
LEVELS = ("candidate", "iteration", "run", "epic")
_REPEATED = ["returned_score", "env_steps", "llm_calls", "cost_usd"]  # run fields repeated on candidate rows


@dataclass(frozen=True)
class Skipped:
    """A run directory that was not counted, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class RunCollection:
    """Tables read from many run directories. Every table carries the run keys (benchmark, task, method, seed).

    runs: one row per run; iterations: one row per (run, iteration); candidates: one row per candidate;
    epic: one row per (run, iteration) from the optional `epic.csv`; skipped: directories not counted.
    """

    runs: pd.DataFrame
    iterations: pd.DataFrame
    candidates: pd.DataFrame
    epic: pd.DataFrame
    skipped: list[Skipped] = field(default_factory=list)

    def table(self, level: str) -> pd.DataFrame:
        if level not in LEVELS:
            raise ValueError(f"level={level!r}; expected one of {LEVELS}")
        return {"candidate": self.candidates, "iteration": self.iterations, "run": self.runs, "epic": self.epic}[level]


class _Corrupt(Exception):
    pass


def find_run_dirs(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """Run directories (those holding `status.json`) at or below each path, sorted, without duplicates."""
    found: set[Path] = set()
    for p in map(Path, [paths] if isinstance(paths, str | os.PathLike) else paths):
        if not p.exists():
            raise FileNotFoundError(f"run path {str(p)!r} does not exist")
        if (p / "status.json").is_file():
            found.add(p.resolve())
            continue
        for root, dirs, files in os.walk(p):
            if "status.json" in files:
                found.add(Path(root).resolve())
                dirs[:] = []  # a run directory holds no nested runs
            else:
                dirs[:] = [d for d in dirs if not d.startswith(".")]
    return sorted(found)


def _read_json(path: Path) -> dict:
    try:
        with open(path) as f:
            obj = json.load(f)
    except FileNotFoundError:
        raise _Corrupt(f"missing {path.name}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise _Corrupt(f"invalid JSON in {path.name}: {e}") from None
    if not isinstance(obj, dict):
        raise _Corrupt(f"{path.name} is not a JSON object")
    return obj


def _num(x: object) -> float:
    """A JSON number as float; None for null. Booleans and strings are corrupt."""
    if x is None:
        return math.nan
    if isinstance(x, bool) or not isinstance(x, int | float):
        raise _Corrupt(f"expected a number, got {x!r}")
    return float(x)


def _check_result(result: dict) -> None:
    if result.get("schema_version") != SCHEMA_VERSION:
        raise _Corrupt(f"result.json schema_version={result.get('schema_version')!r}, expected {SCHEMA_VERSION}")
    if result.get("status") != "completed":
        raise _Corrupt(f"result.json status={result.get('status')!r}, expected 'completed'")
    missing = [k for k in [*_REQUIRED, "returned_score"] if k not in result or (k in _REQUIRED and result[k] is None)]
    if missing:
        raise _Corrupt(f"result.json lacks {missing}")
    for k, typ in _REQUIRED.items():
        if not isinstance(result[k], typ) or isinstance(result[k], bool):
            raise _Corrupt(f"result.json {k}={result[k]!r} is not a {typ.__name__}")
    score = _num(result["returned_score"])  # null is legal: the run returned no reward
    if math.isinf(score):
        raise _Corrupt(f"result.json returned_score={score!r} is not finite")


def _label(result: dict) -> str:
    """The configuration label: the method, plus any design-choice flips (`eureka+four_turn_history`)."""
    choices = result.get("choices") or []
    return "+".join([result["method"], *map(str, choices)])


def _run_row(path: Path, status: dict, result: dict) -> dict:
    tokens = result.get("tokens") or {}
    per_seed = result.get("returned_score_per_seed") or []
    return {
        "benchmark": result["suite"], "task": result["task"], "method": _label(result),
        "seed": int(result["seed"]), "base_method": result["method"],
        "env": result.get("env", f"{result['suite']}/{result['task']}"),
        "returned_score": _num(result["returned_score"]),
        "returned_candidate": (result.get("returned") or {}).get("candidate_id"),
        "n_final_seeds": len(per_seed),
        "n_iterations": len(result.get("iterations") or []),
        "n_tied": len(result["tied_iterations"]) if isinstance(result.get("tied_iterations"), list) else math.nan,
        "n_candidates": _num(result.get("n_candidates")), "n_failed": _num(result.get("n_failed")),
        "env_steps": _num(result.get("env_steps")), "llm_calls": _num(result.get("llm_calls")),
        "input_tokens": _num(tokens.get("input")), "output_tokens": _num(tokens.get("output")),
        "cost_usd": _num(result.get("cost_usd")), "wall_s": _num(result.get("wall_s")),
        "budget": result.get("budget"), "config_hash": result.get("config_hash"),
        "generator": (result.get("generator") or {}).get("label"),
        "updated": status.get("updated"), "run_dir": str(path),
    }


def _iteration_rows(result: dict, scores: dict[str, float]) -> list[dict]:
    """Per iteration; the incumbent is `returned_so_far` when the engine records it, else the best fitness so far."""
    rows, inc_fit, inc_score, inc_id = [], -math.inf, math.nan, None
    for it in result.get("iterations") or []:
        if not isinstance(it, dict) or "iteration" not in it:
            raise _Corrupt(f"result.json iteration entry {it!r} lacks 'iteration'")
        fit, score = _num(it.get("best_fitness")), _num(it.get("best_score"))
        if "returned_so_far" in it:
            inc_id = it["returned_so_far"]
            inc_score = scores.get(inc_id, math.nan) if inc_id else math.nan
        else:
            rank = fit if not math.isnan(fit) else score  # unsupervised methods have no fitness
            if not math.isnan(rank) and rank > inc_fit:
                inc_fit, inc_score, inc_id = rank, score, it.get("best_candidate")
        rows.append({
            "iteration": int(it["iteration"]), "best_candidate": it.get("best_candidate"),
            "best_fitness": fit, "best_score": score,
            "n_candidates": _num(it.get("n_candidates")), "n_failed": _num(it.get("n_failed")),
            "env_steps_cum": _num(it.get("env_steps_cum")),
            "incumbent_candidate": inc_id, "incumbent_score": inc_score,
        })
    return rows


def _candidate_rows(path: Path, returned_id: str | None) -> list[dict]:
    rows = []
    cdir = path / "candidates"
    if not cdir.is_dir():
        return rows
    for entry in sorted(os.scandir(cdir), key=lambda e: e.name):
        if not entry.is_dir():
            continue
        c = _read_json(Path(entry.path) / "candidate.json")
        if "iteration" not in c or "id" not in c:
            raise _Corrupt(f"candidates/{entry.name}/candidate.json lacks 'id' or 'iteration'")
        llm = c.get("llm") or {}
        failure = c.get("failure") or {}
        rows.append({
            "iteration": int(c["iteration"]), "candidate": c["id"], "index": c.get("index"),
            "parent_id": c.get("parent_id"), "status": c.get("status"), "failure_kind": failure.get("kind"),
            "fitness": _num(c.get("fitness")), "score": _num(c.get("score")),
            "final_score": _num(c.get("final_score")), "cand_env_steps": _num(c.get("env_steps")),
            "cand_wall_s": _num(c.get("wall_s")), "cand_cost_usd": _num(llm.get("cost_usd")),
            "cand_input_tokens": _num(llm.get("input_tokens")),
            "cand_output_tokens": _num(llm.get("output_tokens")),
            "is_returned": c["id"] == returned_id,
        })
    return rows


def _epic_rows(path: Path) -> list[dict]:
    """Optional `epic.csv`: iteration, candidate, distance[, random_median] (written by the EPIC stage)."""
    f = path / "epic.csv"
    if not f.is_file():
        return []
    with open(f, newline="") as fh:
        rows = list(csv.DictReader(fh))
    try:
        return [{"iteration": int(r["iteration"]), "candidate": r.get("candidate"),
                 "distance": float(r["distance"]) if r["distance"] not in ("", None) else math.nan,
                 "random_median": float(r.get("random_median") or "nan")} for r in rows]
    except (KeyError, ValueError, TypeError) as e:
        raise _Corrupt(f"epic.csv: {e!r}") from None


def _read_one(path: Path) -> tuple[dict, list[dict], list[dict], list[dict]]:
    status = _read_json(path / "status.json")
    if status.get("state") != "completed":
        raise _Corrupt(f"status.json state={status.get('state')!r} (not completed)")
    result = _read_json(path / "result.json")
    _check_result(result)
    run = _run_row(path, status, result)
    cands = _candidate_rows(path, run["returned_candidate"])
    scores = {c["candidate"]: c["score"] for c in cands}
    return run, _iteration_rows(result, scores), cands, _epic_rows(path)


def _attach(per_run: list[list[dict]], keys: dict[int, dict], keep: list[int], columns: list[str]) -> pd.DataFrame:
    rows = [{**keys[i], **r} for i in keep for r in per_run[i]]
    return pd.DataFrame(rows) if rows else pd.DataFrame(columns=columns)


def _drop_duplicates(runs: list[dict], skipped: list[Skipped]) -> list[int]:
    """Indices of runs to keep: for repeated (benchmark, task, method, seed) keep the latest `updated`."""
    best: dict[tuple, int] = {}
    for i, r in enumerate(runs):
        k = tuple(r[c] for c in RUN_KEYS)
        j = best.get(k)
        if j is None or (runs[i]["updated"] or "") > (runs[j]["updated"] or ""):
            best[k] = i
    for i, r in enumerate(runs):
        j = best[tuple(r[c] for c in RUN_KEYS)]
        if j != i:
            skipped.append(Skipped(r["run_dir"], f"duplicate of {runs[j]['run_dir']} "
                                   f"(same benchmark/task/method/seed; the later run is kept)"))
    return sorted(best.values())


def read_runs(paths: Iterable[str | os.PathLike] | str | os.PathLike, warn: bool = True) -> RunCollection:
    """Read every run directory at or below `paths` into a RunCollection.

    A directory whose status is not `completed`, whose result.json is missing, invalid or lacks a required
    field (method, suite, task, seed, returned_score), or whose candidate/epic files are corrupt is skipped,
    listed in `skipped` with the reason, and reported in one warning. A completed run whose returned_score is
    null (no reward returned) is kept with NaN and warned about. The `method` column is the configuration
    label: the method name plus any `choices` (`eureka+four_turn_history`); `base_method` is the bare name.

    Args:
        paths: run directories, sweep folders, or a mix.
        warn: emit a `UserWarning` naming the skipped directories.
    Returns:
        RunCollection; `benchmark` is the run's suite.
    """
    skipped: list[Skipped] = []
    runs, its, cands, epics = [], [], [], []
    for path in find_run_dirs(paths):
        try:
            run, it_rows, c_rows, e_rows = _read_one(path)
        except _Corrupt as e:
            skipped.append(Skipped(str(path), str(e)))
            continue
        runs.append(run)
        its.append(it_rows)
        cands.append(c_rows)
        epics.append(e_rows)
    keep = _drop_duplicates(runs, skipped)
    key_cols = [*RUN_KEYS, "run_dir"]
    keys = {i: {c: runs[i][c] for c in key_cols} for i in keep}
    shared = {i: {**keys[i], **{c: runs[i][c] for c in _REPEATED}} for i in keep}
    run_df = pd.DataFrame([runs[i] for i in keep]) if keep else pd.DataFrame(columns=[*key_cols, *_REPEATED])
    it_df = _attach(its, keys, keep, [*key_cols, "iteration"])
    c_df = _attach(cands, shared, keep, [*key_cols, *_REPEATED, "iteration", "candidate", "score"])
    e_df = _attach(epics, keys, keep, [*key_cols, "iteration", "distance"])
    no_score = [runs[i]["run_dir"] for i in keep if math.isnan(runs[i]["returned_score"])]
    if no_score and warn:
        warnings.warn(f"{len(no_score)} completed run(s) returned no reward (returned_score null); they are in the "
                      f"tables with NaN and left out of score statistics: {no_score}", UserWarning, stacklevel=2)
    if skipped and warn:
        lines = "\n".join(f"  {s.path}: {s.reason}" for s in skipped)
        warnings.warn(f"skipped {len(skipped)} run director{'y' if len(skipped) == 1 else 'ies'} "
                      f"(not counted):\n{lines}", UserWarning, stacklevel=2)
    return RunCollection(run_df, it_df, c_df, e_df, skipped)


def load_runs(paths: Iterable[str | os.PathLike] | str | os.PathLike, level: str = "candidate") -> pd.DataFrame:
    """Long-form table of many runs; the skipped directories are in `df.attrs["skipped"]`.

    Args:
        paths: run directories and/or sweep folders (searched recursively for `status.json`).
        level: "candidate" (one row per candidate, with the run's returned_score, env_steps, llm_calls and
            cost_usd repeated), "iteration", "run" (one row per run) or "epic".
    Returns:
        DataFrame with columns benchmark, task, method, seed, run_dir, ... (see docs/analysis.md).
    """
    if level not in LEVELS:
        raise ValueError(f"level={level!r}; expected one of {LEVELS}")
    coll = read_runs(paths)
    df = coll.table(level)
    df.attrs["skipped"] = [(s.path, s.reason) for s in coll.skipped]
    return df
