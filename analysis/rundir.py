"""Read run directories (docs/rundir.md, schema_version 1) into tidy pandas tables."""

from __future__ import annotations

import csv
import io
import math
import os
import unicodedata
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from bird.files import read_json, read_text

__all__ = ["RunCollection", "Skipped", "find_run_dirs", "load_runs", "read_runs"]

SCHEMA_VERSION = 1
RUN_KEYS = ["benchmark", "task", "method", "seed"]
_REQUIRED = {"method": str, "suite": str, "task": str, "seed": int}
LEVELS = ("candidate", "iteration", "run", "epic", "transfer")
_REPEATED = ["returned_score", "env_steps", "llm_calls", "cost_usd"]  # run fields repeated on candidate rows
MAX_MAGNITUDE = 1e15  # the largest |number| a run may record in a field the statistics read (sums stay finite)
MAX_NAME = 64         # characters of a suite, task, method or choice name (the label and file names stay short)
MAX_CHOICES = 8
# what a malformed field raises while a run is read: the run is skipped with the reason, the page goes on
_MALFORMED = (TypeError, ValueError, KeyError, AttributeError, OverflowError)


@dataclass(frozen=True)
class Skipped:
    """A run directory that was not counted, and why."""

    path: str
    reason: str


@dataclass(frozen=True)
class RunCollection:
    """Tables read from many run directories. Every table carries the run keys (benchmark, task, method, seed).

    runs: one row per run; iterations: one row per (run, iteration); candidates: one row per candidate;
    epic: one row per (run, iteration) from the optional `epic.csv`; skipped: directories not counted; transfer: one
    row per (run, unseen task) of a generalisation protocol (result.json `transfer`, bird/stages/transfer.py).
    """

    runs: pd.DataFrame
    iterations: pd.DataFrame
    candidates: pd.DataFrame
    epic: pd.DataFrame
    skipped: list[Skipped] = field(default_factory=list)
    transfer: pd.DataFrame = field(default_factory=pd.DataFrame)

    def table(self, level: str) -> pd.DataFrame:
        if level not in LEVELS:
            raise ValueError(f"level={level!r}; expected one of {LEVELS}")
        return {"candidate": self.candidates, "iteration": self.iterations, "run": self.runs, "epic": self.epic,
                "transfer": self.transfer}[level]


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


def _read_json(path: Path, kind: str, run: Path) -> dict:
    """A JSON object from a file of the run (bird/files.py: a regular file inside the run, under its size cap,
    parsed with bounded depth, strings and integers)."""
    try:
        obj = read_json(path, kind, run)
    except FileNotFoundError:
        raise _Corrupt(f"missing {path.name}") from None
    except OSError as e:  # a link leaving the run, a FIFO, a file over its size cap
        raise _Corrupt(f"{path.relative_to(run)} not read: {e}") from None
    except ValueError as e:  # not UTF-8 or not JSON, or beyond a bound (bird/files.py)
        raise _Corrupt(f"invalid JSON in {path.relative_to(run)}: {e}") from None
    if not isinstance(obj, dict):
        raise _Corrupt(f"{path.name} is not a JSON object")
    return obj


def _num(x: object) -> float:
    """A JSON number as float; None (and NaN) for missing. Booleans, strings, infinities and magnitudes over
    MAX_MAGNITUDE are corrupt."""
    if x is None:
        return math.nan
    if isinstance(x, bool) or not isinstance(x, int | float):
        raise _Corrupt(f"expected a number, got {str(x)[:60]!r}")
    if abs(x) > MAX_MAGNITUDE:  # NaN compares False: kept as missing
        raise _Corrupt(f"the number {float(x):.3g} is beyond ±{MAX_MAGNITUDE:.0e}")
    return float(x)


def _name(x: object, what: str) -> str:
    """A suite, task, method or choice name: 1 to MAX_NAME characters, none of them a control character."""
    if not isinstance(x, str) or not 0 < len(x) <= MAX_NAME or any(unicodedata.category(c)[0] == "C" for c in x):
        shown = repr(x[:40]) + f"... ({len(x)} characters)" if isinstance(x, str) and len(x) > 40 else repr(x)[:60]
        raise _Corrupt(f"result.json {what}={shown} is not a name of 1 to {MAX_NAME} printable characters")
    return x


def _dict(x: object, what: str) -> dict:
    """An optional JSON object field: {} when missing."""
    if x is None:
        return {}
    if not isinstance(x, dict):
        raise _Corrupt(f"{what} is not a JSON object")
    return x


def _list(x: object, what: str) -> list:
    """An optional JSON array field: [] when missing."""
    if x is None:
        return []
    if not isinstance(x, list):
        raise _Corrupt(f"{what} is not a JSON array")
    return x


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
            raise _Corrupt(f"result.json {k}={str(result[k])[:60]!r} is not a {typ.__name__}")
    for k in ("method", "suite", "task"):
        _name(result[k], k)
    if abs(result["seed"]) >= 2**63:
        raise _Corrupt(f"result.json seed={result['seed']} is not a 64-bit integer")
    _num(result["returned_score"])  # null is legal: the run returned no reward


def _label(result: dict) -> str:
    """The configuration label: the method, plus any design-choice flips (`eureka+four_turn_history`)."""
    choices = _list(result.get("choices"), "result.json choices")
    if len(choices) > MAX_CHOICES:
        raise _Corrupt(f"result.json lists {len(choices)} choices (at most {MAX_CHOICES})")
    return "+".join([result["method"], *(_name(c, "choice") for c in choices)])


def _run_row(path: Path, status: dict, result: dict) -> dict:
    tokens = _dict(result.get("tokens"), "result.json tokens")
    per_seed = _list(result.get("returned_score_per_seed"), "result.json returned_score_per_seed")
    return {
        "benchmark": result["suite"], "task": result["task"], "method": _label(result),
        "seed": int(result["seed"]), "base_method": result["method"],
        "env": result.get("env", f"{result['suite']}/{result['task']}"),
        "returned_score": _num(result["returned_score"]),
        "returned_candidate": _dict(result.get("returned"), "result.json returned").get("candidate_id"),
        "n_final_seeds": len(per_seed),
        "n_iterations": len(_list(result.get("iterations"), "result.json iterations")),
        "n_tied": len(result["tied_iterations"]) if isinstance(result.get("tied_iterations"), list) else math.nan,
        "n_candidates": _num(result.get("n_candidates")), "n_failed": _num(result.get("n_failed")),
        "env_steps": _num(result.get("env_steps")), "llm_calls": _num(result.get("llm_calls")),
        "input_tokens": _num(tokens.get("input")), "output_tokens": _num(tokens.get("output")),
        "cost_usd": _num(result.get("cost_usd")), "wall_s": _num(result.get("wall_s")),
        "budget": result.get("budget"), "config_hash": result.get("config_hash"),
        "generator": _dict(result.get("generator"), "result.json generator").get("label"),
        "updated": status["updated"] if isinstance(status.get("updated"), str) else None, "run_dir": str(path),
    }


def _iteration_rows(result: dict, scores: dict[str, float]) -> list[dict]:
    """Per iteration; the incumbent is `returned_so_far` when the engine records it, else the best fitness so far."""
    rows, inc_fit, inc_score, inc_id = [], -math.inf, math.nan, None
    for it in _list(result.get("iterations"), "result.json iterations"):
        if not isinstance(it, dict) or not isinstance(it.get("iteration"), int):
            raise _Corrupt(f"result.json iteration entry {str(it)[:60]!r} lacks an integer 'iteration'")
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
        c = _read_json(Path(entry.path) / "candidate.json", "record", path)
        if not isinstance(c.get("iteration"), int) or not isinstance(c.get("id"), str):
            raise _Corrupt(f"candidates/{entry.name}/candidate.json lacks a string 'id' or an integer 'iteration'")
        llm = _dict(c.get("llm"), f"candidates/{entry.name}/candidate.json llm")
        failure = _dict(c.get("failure"), f"candidates/{entry.name}/candidate.json failure")
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
    if not os.path.lexists(f):
        return []
    try:
        rows = list(csv.DictReader(io.StringIO(read_text(f, "table", path), newline="")))
        return [{"iteration": int(r["iteration"]), "candidate": r.get("candidate"),
                 "distance": _num(float(r["distance"])) if r["distance"] not in ("", None) else math.nan,
                 "random_median": _num(float(r.get("random_median") or "nan"))} for r in rows]
    except (OSError, csv.Error, KeyError, ValueError, TypeError) as e:
        raise _Corrupt(f"epic.csv: {str(e)[:200]}") from None


def _transfer_rows(result: dict) -> list[dict]:
    """Per unseen task of result.json `transfer`: the source, the unseen task, the mean score over the run's final
    seeds (NaN when none was evaluated) and the number of seeds evaluated."""
    record = _dict(result.get("transfer"), "result.json transfer")
    if not record:
        return []
    source = _name(record.get("source"), "transfer source")
    rows = []
    for unseen, entry in _dict(record.get("tasks"), "result.json transfer tasks").items():
        entry = _dict(entry, f"result.json transfer task {str(unseen)[:40]!r}")
        scores = [_num(x) for x in _list(entry.get("scores"), "result.json transfer scores")]
        done = [x for x in scores if not math.isnan(x)]
        rows.append({"source": source, "unseen": _name(unseen, "transfer task"),
                     "transfer_score": sum(done) / len(done) if done else math.nan, "n_final_seeds": len(done)})
    return rows


def _read_one(path: Path) -> tuple[dict, list[dict], list[dict], list[dict], list[dict]]:
    status = _read_json(path / "status.json", "status", path)
    if status.get("state") != "completed":
        why = f": {str(status.get('error'))[:200]}" if status.get("error") else ""
        raise _Corrupt(f"status.json state={str(status.get('state'))[:40]!r} (not completed{why})")
    result = _read_json(path / "result.json", "result", path)
    _check_result(result)
    run = _run_row(path, status, result)
    cands = _candidate_rows(path, run["returned_candidate"])
    scores = {c["candidate"]: c["score"] for c in cands}
    return run, _iteration_rows(result, scores), cands, _epic_rows(path), _transfer_rows(result)


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
    runs, its, cands, epics, transfers = [], [], [], [], []
    for path in find_run_dirs(paths):
        try:
            run, it_rows, c_rows, e_rows, t_rows = _read_one(path)
        except _Corrupt as e:
            skipped.append(Skipped(str(path), str(e)))
            continue
        except _MALFORMED as e:  # a field of a shape no check above foresaw: skipped all the same
            skipped.append(Skipped(str(path), f"malformed record ({type(e).__name__}: {str(e)[:200]})"))
            continue
        runs.append(run)
        its.append(it_rows)
        cands.append(c_rows)
        epics.append(e_rows)
        transfers.append(t_rows)
    keep = _drop_duplicates(runs, skipped)
    key_cols = [*RUN_KEYS, "run_dir"]
    keys = {i: {c: runs[i][c] for c in key_cols} for i in keep}
    shared = {i: {**keys[i], **{c: runs[i][c] for c in _REPEATED}} for i in keep}
    run_df = pd.DataFrame([runs[i] for i in keep]) if keep else pd.DataFrame(columns=[*key_cols, *_REPEATED])
    it_df = _attach(its, keys, keep, [*key_cols, "iteration"])
    c_df = _attach(cands, shared, keep, [*key_cols, *_REPEATED, "iteration", "candidate", "score"])
    e_df = _attach(epics, keys, keep, [*key_cols, "iteration", "distance"])
    t_df = _attach(transfers, shared, keep, [*key_cols, *_REPEATED, "source", "unseen", "transfer_score"])
    no_score = [runs[i]["run_dir"] for i in keep if math.isnan(runs[i]["returned_score"])]
    if no_score and warn:
        warnings.warn(f"{len(no_score)} completed run(s) returned no reward (returned_score null); they are in the "
                      f"tables with NaN and left out of score statistics: {no_score}", UserWarning, stacklevel=2)
    if skipped and warn:
        lines = "\n".join(f"  {s.path}: {s.reason}" for s in skipped)
        warnings.warn(f"skipped {len(skipped)} run director{'y' if len(skipped) == 1 else 'ies'} "
                      f"(not counted):\n{lines}", UserWarning, stacklevel=2)
    return RunCollection(run_df, it_df, c_df, e_df, skipped, t_df)


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
